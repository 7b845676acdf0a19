from mermaid_cli.cli.main import main

main()
