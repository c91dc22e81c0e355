"""`python -m replay`: the same command line as the `replay` script."""

from replay.cli import main

if __name__ == "__main__":
    main()
