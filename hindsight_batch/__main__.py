from hindsight_batch.cli import main

if __name__ == "__main__":  # not when a spawned worker process (import --jobs) imports the main module
    main()
