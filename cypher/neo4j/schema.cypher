// schema (Neo4j 5): uniqueness constraints on ids (each backed by a range index of the same name) and an
// index on Entity.name. One statement per ';'; IF NOT EXISTS makes re-running a no-op.
// Parameters: none. Returns: nothing.
CREATE CONSTRAINT paragraph_id IF NOT EXISTS FOR (n:Paragraph) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT sentence_id IF NOT EXISTS FOR (n:Sentence) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (n:Entity) REQUIRE n.id IS UNIQUE;
CREATE CONSTRAINT graphmeta_key IF NOT EXISTS FOR (n:GraphMeta) REQUIRE n.key IS UNIQUE;
CREATE INDEX entity_name IF NOT EXISTS FOR (n:Entity) ON (n.name)
