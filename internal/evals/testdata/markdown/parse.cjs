// Parses the Markdown on stdin with markdown-it (CommonMark + GFM tables),
// the renderer the summary tests use, and prints what it found as JSON:
// the tables (header and rows, each cell's text), the headings, the fenced
// code blocks and the HTML. Usage: node parse.cjs NPM_PREFIX < summary.md
const path = require("path");
const MarkdownIt = require(path.join(process.argv[2], "node_modules", "markdown-it"));
const md = new MarkdownIt("commonmark").enable("table");
const src = require("fs").readFileSync(0, "utf8");
const tokens = md.parse(src, {});
const text = (tok) => (tok.children || []).filter((c) => c.type === "text" || c.type === "code_inline").map((c) => c.content).join("");
const out = { tables: [], headings: [], code: [], html: md.render(src) };
let table = null, row = null, heading = null;
for (const t of tokens) {
  switch (t.type) {
    case "table_open": table = { head: [], rows: [] }; break;
    case "table_close": out.tables.push(table); table = null; break;
    case "tr_open": row = []; break;
    case "tr_close": if (table.head.length === 0) table.head = row; else table.rows.push(row); row = null; break;
    case "heading_open": heading = t.tag; break;
    case "heading_close": heading = null; break;
    case "fence": out.code.push({ info: t.info, content: t.content }); break;
    case "inline":
      if (row) row.push(text(t));
      else if (heading) out.headings.push({ level: heading, text: text(t) });
      break;
  }
}
process.stdout.write(JSON.stringify(out));
