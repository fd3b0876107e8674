// count_relationships_by_type (Neo4j): relationship count of each type of the graph schema; same rows as the
// shared file, whose bare CALL { } subquery Neo4j 5.23+ reports as deprecated on every call (FalkorDB rejects
// the CALL () { } variable-scope form, so only Neo4j gets it). A type with nothing to count
// yields no row (its name literal is a grouping key); the store reports it as 0.
// Parameters: none
// Returns: type (string), count (int)
// Order: type
CALL () {
  MATCH ()-[r:CONTAINS]->() RETURN 'CONTAINS' AS type, count(r) AS count
  UNION ALL
  MATCH ()-[r:NEXT]->() RETURN 'NEXT' AS type, count(r) AS count
  UNION ALL
  MATCH ()-[r:MENTIONS]->() RETURN 'MENTIONS' AS type, count(r) AS count
  UNION ALL
  MATCH ()-[r:SYNONYM]->() RETURN 'SYNONYM' AS type, count(r) AS count
}
RETURN type, count
ORDER BY type
