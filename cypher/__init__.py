"""Named, parameterised Cypher queries (package data). See harness_g.graph.stores.queries."""
