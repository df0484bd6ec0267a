"""``hindsight-batch review``: one self-contained HTML page to look at a run before sending it.

In: the ledger (a run's manifest rows, read in SQL by ``query``). Out: the page, one ``0600`` HTML file with its
style, script, chart (``svg``) and data inline (``page``, ``assets``); nothing is sent anywhere.
"""

from hindsight_batch.review.page import write_review

__all__ = ["write_review"]
