// delta_delete_synonyms: remove SYNONYM edges an append made obsolete (graph/append.py), matched on the
// load_synonyms MERGE key (idempotent: an edge already gone matches nothing).
// Parameters:
//   $rows: list<map>  {src: string, dst: string, kind: 'canonical'|'title'|'abbreviation'|'embedding'|'alias'}
// Returns: nothing
UNWIND $rows AS r
MATCH (a:Entity {id: r.src})-[y:SYNONYM {kind: r.kind}]->(b:Entity {id: r.dst})
DELETE y
