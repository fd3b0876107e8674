// entities_by_names: entities whose canonical name is one of the given names (a name may have one entity per NER label).
// Parameters:
//   $names: list<string>  canonical (normalised) entity names
// Returns: id, name, surface, label, lookupable (bool), mentions (int, number of mentions in the corpus)
// Order: name, id
UNWIND $names AS nm
WITH DISTINCT nm
MATCH (e:Entity {name: nm})
RETURN e.id AS id, e.name AS name, e.surface AS surface, e.label AS label, e.lookupable AS lookupable, e.mentions AS mentions
ORDER BY name, id
