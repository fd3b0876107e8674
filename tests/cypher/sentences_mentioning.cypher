// sentences_mentioning: S(e), the sentences that mention each given entity.
// Parameters:
//   $entity_ids: list<string>  entity ids
// Returns: entity_id, sentence_id
// Order: entity_id, sentence_id
UNWIND $entity_ids AS eid
WITH DISTINCT eid
MATCH (e:Entity {id: eid})<-[:MENTIONS]-(s:Sentence)
RETURN DISTINCT e.id AS entity_id, s.id AS sentence_id
ORDER BY entity_id, sentence_id
