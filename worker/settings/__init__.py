"""A worker's settings: its flags parsed, the option table's rows and the named derivations."""
