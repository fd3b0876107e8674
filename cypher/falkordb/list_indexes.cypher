// list_indexes (FalkorDB): every index of the graph, one row per indexed label (a label's fields share a status).
// Parameters: none
// Returns: label, properties (list<string>), types (map property -> list of 'RANGE'|'VECTOR'|'FULLTEXT'),
//          entitytype ('NODE'|'RELATIONSHIP'), status ('OPERATIONAL'|'UNDER CONSTRUCTION')
// Order: label
CALL db.indexes() YIELD label, properties, types, entitytype, status
RETURN label, properties, types, entitytype, status
ORDER BY label
