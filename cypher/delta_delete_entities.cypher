// delta_delete_entities: remove Entity nodes an append made obsolete (graph/append.py), with their relationships
// (idempotent: an id already gone matches nothing).
// Parameters:
//   $rows: list<map>  {id: string}  entity ids
// Returns: nothing
UNWIND $rows AS r
MATCH (e:Entity {id: r.id})
DETACH DELETE e
