from hindsight_batch.cli import main

main()
