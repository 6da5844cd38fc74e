from memdex.doors.cli import main

main()
