// lookup_candidates_sampled: lookup_candidates_multi's paper pool with every hub's mention set S(x) replaced by its
//   stored sample (EnvConfig.lookup_hub_sample; harness_g.graph.stores.hub_sample), so the rows read per entity are
//   bounded whatever the corpus: C'(e) = P(e) ∪ P(Syn(e)) ∪ N_SS(P(e)), where P(x) = x.pool_sample when x is a hub
//   (more than GraphMeta.hub_sample distinct sentences mention it), else S(x). An entity whose pool touches no hub
//   gets exactly the paper's C(e) (Harness-G §3.3, the equation of C(e)). No article channel (refused by EnvConfig).
//   A hub's sample ids are returned as stored (sentences are never deleted, so each names a Sentence node).
//   Deduplicated, first channel wins in the order mention (0) < synonym (1) < neighbour (2).
// Parameters:
//   $entity_ids: list<string>  entity ids (unknown ids -> no rows; duplicates collapse)
// Returns: entity_id, id (sentence id), channel ('mention'|'synonym'|'neighbour'), priority (int 0..2),
//   anchor (boolean, always false: the columns of lookup_candidates_multi)
// Order: entity_id, priority, id
UNWIND $entity_ids AS eid
WITH DISTINCT eid
MATCH (e:Entity {id: eid})
CALL {
  WITH e
  WITH e WHERE e.pool_sample IS NULL
  MATCH (e)<-[:MENTIONS]-(s:Sentence)
  RETURN s.id AS id, 0 AS priority
  UNION
  WITH e
  WITH e WHERE e.pool_sample IS NOT NULL
  UNWIND e.pool_sample AS id
  RETURN id, 0 AS priority
  UNION
  WITH e
  MATCH (e)-[:SYNONYM]-(f:Entity)
  WITH f WHERE f.pool_sample IS NULL
  MATCH (f)<-[:MENTIONS]-(s:Sentence)
  RETURN s.id AS id, 1 AS priority
  UNION
  WITH e
  MATCH (e)-[:SYNONYM]-(f:Entity)
  WITH f WHERE f.pool_sample IS NOT NULL
  UNWIND f.pool_sample AS id
  RETURN id, 1 AS priority
  UNION
  WITH e
  WITH e WHERE e.pool_sample IS NULL
  MATCH (e)<-[:MENTIONS]-(:Sentence)-[:NEXT]-(s:Sentence)
  RETURN s.id AS id, 2 AS priority
  UNION
  WITH e
  WITH e WHERE e.pool_sample IS NOT NULL
  UNWIND e.pool_sample AS sid
  MATCH (:Sentence {id: sid})-[:NEXT]-(s:Sentence)
  RETURN s.id AS id, 2 AS priority
}
WITH e.id AS eid, id, min(priority) AS priority
RETURN eid AS entity_id, id, CASE priority WHEN 0 THEN 'mention' WHEN 1 THEN 'synonym' ELSE 'neighbour' END AS channel,
       priority, false AS anchor
ORDER BY entity_id, priority, id
