// entities_by_ids: fetch entities by id (unknown ids are skipped, duplicates collapse).
// Parameters:
//   $ids: list<string>  entity ids ("e_<hash>")
// Returns: id, name, surface, label, lookupable (bool), reject_reason (string or null), mentions (int)
// Order: id
UNWIND $ids AS eid
WITH DISTINCT eid
MATCH (e:Entity {id: eid})
RETURN e.id AS id, e.name AS name, e.surface AS surface, e.label AS label, e.lookupable AS lookupable,
       e.reject_reason AS reject_reason, e.mentions AS mentions
ORDER BY id
