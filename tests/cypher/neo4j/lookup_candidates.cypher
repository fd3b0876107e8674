// lookup_candidates (Neo4j): the LOOKUP candidate pool C(e) = S(e) ∪ S(Syn(e)) ∪ N_SS(S(e)) of one entity,
// deduplicated; same rows and order as the shared file, written with the CALL () { } variable-scope clause
// because Neo4j 5.23+ reports the shared file's bare CALL { } as deprecated (FalkorDB rejects CALL () { }).
//   S(e): sentences mentioning e                      -> channel 'mention'   (priority 0)
//   S(Syn(e)): sentences mentioning a synonym of e    -> channel 'synonym'   (priority 1; SYNONYM read undirected)
//   N_SS(S(e)): previous/next sentence of each S(e)   -> channel 'neighbour' (priority 2)
//   A sentence reachable through several channels keeps the first one in that priority order.
// Parameters:
//   $entity_id: string  entity id (unknown id -> no rows)
// Returns: id (sentence id), channel ('mention'|'synonym'|'neighbour'), priority (int 0|1|2)
// Order: priority, id
CALL () {
  MATCH (:Entity {id: $entity_id})<-[:MENTIONS]-(s:Sentence)
  RETURN s.id AS id, 0 AS priority
  UNION
  MATCH (:Entity {id: $entity_id})-[:SYNONYM]-(:Entity)<-[:MENTIONS]-(s:Sentence)
  RETURN s.id AS id, 1 AS priority
  UNION
  MATCH (:Entity {id: $entity_id})<-[:MENTIONS]-(:Sentence)-[:NEXT]-(s:Sentence)
  RETURN s.id AS id, 2 AS priority
}
WITH id, min(priority) AS priority
RETURN id, CASE priority WHEN 0 THEN 'mention' WHEN 1 THEN 'synonym' ELSE 'neighbour' END AS channel, priority
ORDER BY priority, id
