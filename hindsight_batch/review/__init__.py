"""``hindsight-batch review``: one self-contained HTML page to look at a run before sending it."""

from hindsight_batch.review.page import write_review

__all__ = ["write_review"]
