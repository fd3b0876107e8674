// list_indexes (Neo4j): every index with its population state.
// Parameters: none
// Returns: name, type ('RANGE'|'VECTOR'|'LOOKUP'|...), state ('ONLINE'|'POPULATING'|'FAILED'),
//          population_percent (float), labels (list<string>), properties (list<string>)
// Order: name
SHOW INDEXES YIELD name, type, state, populationPercent, labelsOrTypes, properties
RETURN name, type, state, populationPercent AS population_percent, labelsOrTypes AS labels, properties
ORDER BY name
