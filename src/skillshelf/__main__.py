from skillshelf.cli import main

if __name__ == "__main__":  # guarded: parse workers are spawned and re-import the main module
    main()
