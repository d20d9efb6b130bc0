"""One libcst transformer per Python construct, applied in order by ``transpiler.conversion``."""
