// lookup_ranked (Neo4j): the best $k sentences of one entity's paper LOOKUP pool by cosine to a query vector,
//   ranked inside the store, so a hub entity's pool (10^4-10^5 sentences on a replicated corpus) never crosses the
//   wire: EnvConfig.lookup_store_rank_min sends the LOOKUPs of entities with at least that many mentions here.
//   The pool is C(e) = S(e) ∪ S(Syn(e)) ∪ N_SS(S(e)) of lookup_candidates_multi without $articles (Harness-G §3.3,
//   the equation of C(e)), each sentence once, minus $exclude (C_t). Its cost still follows the pool (every member's
//   cosine is computed), at the store's speed instead of the client's row parsing.
//   vector.similarity.cosine is (1 + cosine) / 2, monotone in the cosine; the similarity returned is the cosine.
// Parameters:
//   $entity_id: string        the entity (unknown -> no rows)
//   $vector: list<float>      query embedding m_t (L2-normalised, the index's dimension)
//   $exclude: list<string>    sentence ids left out (the committed C_t)
//   $k: int                   how many to return (EnvConfig.lookup_pool_cap)
// Returns: id (sentence id), similarity (float, cosine)
// Order: similarity descending, ties by id (GraphView.rank_top's order)
WITH $entity_id AS eid
CALL (eid) {
  MATCH (:Entity {id: eid})<-[:MENTIONS]-(s:Sentence)
  RETURN s
  UNION
  MATCH (:Entity {id: eid})-[:SYNONYM]-(:Entity)<-[:MENTIONS]-(s:Sentence)
  RETURN s
  UNION
  MATCH (:Entity {id: eid})<-[:MENTIONS]-(:Sentence)-[:NEXT]-(s:Sentence)
  RETURN s
}
WITH s WHERE NOT s.id IN $exclude
WITH s.id AS id, vector.similarity.cosine(s.embedding, $vector) AS score
ORDER BY score DESC, id
LIMIT $k
RETURN id, 2.0 * score - 1.0 AS similarity
