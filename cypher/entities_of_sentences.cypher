// entities_of_sentences: the entities mentioned in each given sentence (one row per sentence/entity pair,
// however many times the entity is mentioned there).
// Parameters:
//   $ids: list<string>         sentence ids
//   $lookupable_only: boolean  true: keep only entities that may be LOOKUP targets (lookupable = true)
// Returns: sentence_id, entity_id, name, surface, label, lookupable (bool), mentions (int)
// Order: sentence_id, entity_id
UNWIND $ids AS sid
WITH DISTINCT sid
// no :Entity label on e: with it FalkorDB plans a full Entity label scan instead of the Sentence id index
MATCH (s:Sentence {id: sid})-[:MENTIONS]->(e)
WHERE NOT $lookupable_only OR e.lookupable = true
RETURN DISTINCT s.id AS sentence_id, e.id AS entity_id, e.name AS name, e.surface AS surface, e.label AS label,
       e.lookupable AS lookupable, e.mentions AS mentions
ORDER BY sentence_id, entity_id
