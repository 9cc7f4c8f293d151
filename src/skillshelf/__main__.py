from skillshelf.cli import main

main()
