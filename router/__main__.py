from router.cli.main import main

main()
