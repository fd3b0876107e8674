// load_pool_samples: set (or, with a null sample, remove) the hub sample of Entity nodes
//   (harness_g.graph.stores.hub_sample: the HUB_SAMPLE_SIZE sentence ids of a hub's S(e) with the smallest key,
//   in key order; EnvConfig.lookup_hub_sample reads it in place of S(e)). Runs after load_entities.
// Parameters:
//   $rows: list<map>  {id: string (entity id), sample: list<string> | null}
// Returns: nothing
UNWIND $rows AS r
MATCH (e:Entity {id: r.id})
SET e.pool_sample = r.sample
