from iosight.cli import main

main()
