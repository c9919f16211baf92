"""The option table's rows, one module per group; :data:`corral.options.table.OPTIONS` joins
them in order."""
