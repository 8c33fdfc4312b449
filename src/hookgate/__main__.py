from hookgate.cli import main

main()
