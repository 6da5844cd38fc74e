from memdex.doors.main import main

main()
