// synonyms_of: Syn(e), the entities linked to e by a SYNONYM edge (stored once src->dst, read undirected).
// Parameters:
//   $entity_id: string  entity id
// Returns: id, name, label, lookupable (bool), kind ('canonical'|'title'|'abbreviation'|'embedding'), score (float)
// Order: id, kind, score
MATCH (e:Entity {id: $entity_id})-[r:SYNONYM]-(o:Entity)
WHERE o.id <> e.id
RETURN o.id AS id, o.name AS name, o.label AS label, o.lookupable AS lookupable, r.kind AS kind, r.score AS score
ORDER BY id, kind, score
