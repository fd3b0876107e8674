// pool_members: which of the given sentences lie in which of the given entities' LOOKUP pools
//   C(e) = S(e) ∪ S(Syn(e)) ∪ N_SS(S(e)) (lookup_candidates_multi without $articles), asked from the sentences'
//   side: s mentions e, s mentions a synonym of e (SYNONYM read undirected), or a NEXT neighbour of s mentions e.
//   Its cost follows the sentences given and their own edges, never the size of a pool: the bounded LOOKUP
//   (EnvConfig.lookup_index_top_m) intersects the vector index's top M with the pools this way.
// Parameters:
//   $sentence_ids: list<string>  sentence ids (unknown ids -> no rows)
//   $entity_ids: list<string>    entity ids
// Returns: sentence_id, entity_id (one row per pair, whatever the channels)
// Order: none (a set of pairs)
UNWIND $sentence_ids AS sid
MATCH (s:Sentence {id: sid})-[:MENTIONS]->(e)
WHERE e.id IN $entity_ids
RETURN s.id AS sentence_id, e.id AS entity_id
UNION
UNWIND $sentence_ids AS sid
MATCH (s:Sentence {id: sid})-[:MENTIONS]->()-[:SYNONYM]-(e)
WHERE e.id IN $entity_ids
RETURN s.id AS sentence_id, e.id AS entity_id
UNION
UNWIND $sentence_ids AS sid
MATCH (s:Sentence {id: sid})-[:NEXT]-()-[:MENTIONS]->(e)
WHERE e.id IN $entity_ids
RETURN s.id AS sentence_id, e.id AS entity_id
