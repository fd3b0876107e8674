// count_relationships_by_type: relationship count of each type of the graph schema. A type the graph has never
// held may yield no row (FalkorDB drops it inside the UNION); the store reports it as 0.
// Parameters: none
// Returns: type (string), count (int)
// Order: type
CALL {
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
