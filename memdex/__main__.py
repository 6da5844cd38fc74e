from memdex.cli import main

main()
