from downloads.child import main

main()
