from benchpack.cli import main

main()
