// lookup_candidates_multi (Neo4j): lookup_candidates for several entities in one round trip (menu previews);
// same rows and order as the shared file, which imports eid with CALL { WITH eid ... } (deprecated since
// Neo4j 5.23); here the CALL (eid) { } variable-scope clause imports it (FalkorDB rejects that form).
//   Per entity: C(e) = S(e) ∪ S(Syn(e)) ∪ N_SS(S(e)), deduplicated, first channel wins in the order
//   mention (0) < synonym (1) < neighbour (2). Pools of different entities are independent.
// Parameters:
//   $entity_ids: list<string>  entity ids (unknown ids -> no rows; duplicates collapse)
// Returns: entity_id, id (sentence id), channel ('mention'|'synonym'|'neighbour'), priority (int 0|1|2)
// Order: entity_id, priority, id
UNWIND $entity_ids AS eid
WITH DISTINCT eid
CALL (eid) {
  MATCH (:Entity {id: eid})<-[:MENTIONS]-(s:Sentence)
  RETURN s.id AS id, 0 AS priority
  UNION
  MATCH (:Entity {id: eid})-[:SYNONYM]-(:Entity)<-[:MENTIONS]-(s:Sentence)
  RETURN s.id AS id, 1 AS priority
  UNION
  MATCH (:Entity {id: eid})<-[:MENTIONS]-(:Sentence)-[:NEXT]-(s:Sentence)
  RETURN s.id AS id, 2 AS priority
}
WITH eid, id, min(priority) AS priority
RETURN eid AS entity_id, id, CASE priority WHEN 0 THEN 'mention' WHEN 1 THEN 'synonym' ELSE 'neighbour' END AS channel,
       priority
ORDER BY entity_id, priority, id
