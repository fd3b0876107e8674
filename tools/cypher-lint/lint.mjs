#!/usr/bin/env node
// Lint Cypher with Neo4j's own analyser: the parser and semantic analysis of @neo4j-cypher/language-support
// (Neo4j's Cypher front end compiled to JavaScript, the one behind Neo4j Browser/Workspace/VS Code), run for
// Cypher 5 (the language of Neo4j 5.26) with no database connected.
//
//   node tools/cypher-lint/lint.mjs < queries.json > diagnostics.json
//
// stdin:  JSON array [{"name": string, "text": string, "consoleCommands"?: boolean}]
//         consoleCommands: true lets Browser commands (":param x => 1", ":use db") through, as Browser does;
//         default false, what a driver sends (a ":" line is then an error).
// stdout: JSON array, same order: [{"name", "diagnostics": [{"severity", "message", "deprecation", "line", "column"}]}]
//         severity: "error" | "warning" | "information" | "hint"; deprecation: true for a deprecated feature
//         (such warnings are not tagged by the analyser, so the message is matched too);
//         line, column: 1-based, in the given text.
// Exit status: 0 whatever was found (the caller judges the diagnostics); 2 on bad input.
//
// With no database schema the linter knows no procedures, functions, labels or parameters. It does not
// check procedure, function or label names then, but it would report every $parameter as undefined (it
// checks Browser :param values), so every parameter counts as declared: the driver sends them at run time.
import { createRequire } from 'node:module';

// The package's ESM build has extension-less relative imports that Node cannot load; its CommonJS build works.
const require = createRequire(import.meta.url);
const { lintCypherQuery } = require('@neo4j-cypher/language-support');

const CYPHER_VERSION = 'CYPHER 5';
const SEVERITY = { 1: 'error', 2: 'warning', 3: 'information', 4: 'hint' };
const DEPRECATED_TAG = 2; // vscode-languageserver-types DiagnosticTag.Deprecated
// the linter asks `parameters[name] === undefined`; null for every name declares them all
const ANY_PARAMETER = new Proxy({}, { get: () => null });

function lint({ text, consoleCommands = false }) {
  const schema = { defaultLanguage: CYPHER_VERSION, parameters: ANY_PARAMETER };
  return lintCypherQuery(text, schema, consoleCommands).map((d) => ({
    severity: SEVERITY[d.severity] ?? String(d.severity),
    message: d.message,
    deprecation: (d.tags ?? []).includes(DEPRECATED_TAG) || /\bdeprecated\b/i.test(d.message),
    line: d.range.start.line + 1,
    column: d.range.start.character + 1,
  }));
}

async function main() {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  let items;
  try {
    items = JSON.parse(input);
    if (!Array.isArray(items) || !items.every((i) => i && typeof i.name === 'string' && typeof i.text === 'string')) {
      throw new Error('expected a JSON array of {"name": string, "text": string}');
    }
  } catch (err) {
    process.stderr.write(`cypher-lint: bad input: ${err.message}\n`);
    process.exit(2);
  }
  const results = items.map((item) => ({ name: item.name, diagnostics: lint(item) }));
  process.stdout.write(JSON.stringify(results) + '\n');
}

await main();
