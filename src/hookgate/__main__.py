from hookgate.launcher import main

main()
