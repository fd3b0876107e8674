// list_indexes (Neo4j): every index with its population state and options.
// Parameters: none
// Returns: name, type ('RANGE'|'VECTOR'|'LOOKUP'|...), state ('ONLINE'|'POPULATING'|'FAILED'),
//          population_percent (float), labels (list<string>), properties (list<string>),
//          options (map: indexProvider, indexConfig -- e.g. vector.dimensions)
// Order: name
SHOW INDEXES YIELD name, type, state, populationPercent, labelsOrTypes, properties, options
RETURN name, type, state, populationPercent AS population_percent, labelsOrTypes AS labels, properties, options
ORDER BY name
