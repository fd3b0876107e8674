// load_entities: upsert Entity nodes (idempotent: MERGE on id, then SET every property).
// Parameters:
//   $rows: list<map>  {id: string, name: string, surface: string, label: string, lookupable: boolean,
//                      reject_reason: string|null, mentions: int}
// Returns: nothing
UNWIND $rows AS r
MERGE (e:Entity {id: r.id})
SET e.name = r.name, e.surface = r.surface, e.label = r.label, e.lookupable = r.lookupable,
    e.reject_reason = r.reject_reason, e.mentions = r.mentions
