// lookup_candidates_multi (Neo4j): lookup_candidates for several entities in one round trip (menu previews);
// same rows and order as the shared file, which imports eid with CALL { WITH eid ... } (deprecated since
// Neo4j 5.23); here the CALL (eid) { } variable-scope clause imports it (FalkorDB rejects that form).
//   Per entity: C(e) = S(e) ∪ S(Syn(e)) ∪ N_SS(S(e)), deduplicated, first channel wins in the order
//   mention (0) < synonym (1) < neighbour (2) < article (3). Pools of different entities are independent.
//   article (only with $articles, EnvConfig.article_pool): every sentence of the article(s) e titles -- the
//   paragraph of its own title anchor (MENTIONS kind 'title'), or of a TITLE entity linked to e by a 'title'
//   SYNONYM ("Scott Sidney" the PERSON and the article "Scott Sidney"): an article names its subject in the lead,
//   then says "He" or "The film" (harness-g.tex l.287-291, l.987). The article branches also return the anchor
//   sentence a itself (s = a), flagged as the anchor; its channel stays its lowest (it mentions e, channel 0, or
//   the title synonym, channel 1). Neo4j never reuses a relationship inside one pattern, so here the paragraph's
//   two CONTAINS hops are two MATCH clauses (otherwise s = a is never a row). Starting from the anchor sentence
//   is ~15% faster on FalkorDB than matching the paragraph first (lookup_candidates_multi p50 2.05 vs 2.4 ms on
//   the 2Wiki dev graph's menu calls).
// Parameters:
//   $entity_ids: list<string>  entity ids (unknown ids -> no rows; duplicates collapse)
//   $articles: boolean         add the article channel
// Returns: entity_id, id (sentence id), channel ('mention'|'synonym'|'neighbour'|'article'), priority (int 0..3),
//   anchor (boolean: the sentence is the title anchor -- the first sentence, harness-g.tex l.987 -- of an article e
//   titles, whatever its channel; always false without $articles: EnvConfig.article_pool's LOOKUP shows it)
// Order: entity_id, priority, id
UNWIND $entity_ids AS eid
WITH DISTINCT eid
CALL (eid) {
  MATCH (:Entity {id: eid})<-[:MENTIONS]-(s:Sentence)
  RETURN s.id AS id, 0 AS priority, 0 AS anchor
  UNION
  MATCH (:Entity {id: eid})-[:SYNONYM]-(:Entity)<-[:MENTIONS]-(s:Sentence)
  RETURN s.id AS id, 1 AS priority, 0 AS anchor
  UNION
  MATCH (:Entity {id: eid})<-[:MENTIONS]-(:Sentence)-[:NEXT]-(s:Sentence)
  RETURN s.id AS id, 2 AS priority, 0 AS anchor
  UNION
  MATCH (:Entity {id: eid})<-[:MENTIONS {kind: 'title'}]-(a:Sentence)
  WHERE $articles
  MATCH (a)<-[:CONTAINS]-(p:Paragraph)
  MATCH (p)-[:CONTAINS]->(s:Sentence)
  RETURN s.id AS id, 3 AS priority, CASE WHEN s = a THEN 1 ELSE 0 END AS anchor
  UNION
  MATCH (:Entity {id: eid})-[:SYNONYM {kind: 'title'}]-(:Entity)<-[:MENTIONS {kind: 'title'}]-(a:Sentence)
  WHERE $articles
  MATCH (a)<-[:CONTAINS]-(p:Paragraph)
  MATCH (p)-[:CONTAINS]->(s:Sentence)
  RETURN s.id AS id, 3 AS priority, CASE WHEN s = a THEN 1 ELSE 0 END AS anchor
}
WITH eid, id, min(priority) AS priority, max(anchor) AS anchor
RETURN eid AS entity_id, id, CASE priority WHEN 0 THEN 'mention' WHEN 1 THEN 'synonym' WHEN 2 THEN 'neighbour' ELSE 'article' END AS channel,
       priority, anchor = 1 AS anchor
ORDER BY entity_id, priority, id
