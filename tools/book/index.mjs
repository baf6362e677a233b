// index.mjs OUT TOC_MD CHAPTER.md... - from the rendered pages of the book,
// the search index (OUT/search-index.js) and the contents (TOC_MD, Markdown
// that build.sh renders into index.html).
//
// The index has one entry per section (the text between two headings of
// level 2), so that a search result opens the section, not just the chapter.
// It is a script that sets window.BOOK_INDEX: a page opened from file://
// may not fetch a JSON file.
import fs from "node:fs";
import path from "node:path";

const [out, tocMd, ...chapters] = process.argv.slice(2);
const entities = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", nbsp: " " };
const text = (html) =>
  html
    .replace(/<math[\s\S]*?<\/math>/g, " ")
    .replace(/<!--[\s\S]*?-->/g, " ")
    .replace(/<[^>]+>/g, " ")
    .replace(/&(amp|lt|gt|quot|#39|nbsp);/g, (_, e) => entities[e])
    .replace(/\s+/g, " ")
    .trim();

const index = [];
const toc = ["# dtlab: learning distributed training by building it", ""];
toc.push("Each chapter derives what its lab builds; the lab's contract cites the");
toc.push("chapter's sections by number. [The whole book on one page](print.html)");
toc.push("(for printing: every hint open).", "");
for (const md of chapters) {
  const base = path.basename(md, ".md");
  const page = `${base}.html`;
  const html = fs.readFileSync(path.join(out, page), "utf8");
  const main = html.slice(html.indexOf("<main>"), html.indexOf("</main>"));
  const h1 = main.match(/<h1[^>]*>([\s\S]*?)<\/h1>/);
  const title = h1 ? text(h1[1]) : base;
  toc.push(`- [${title}](${page})`);
  // Split at the level-2 headings: [before, id, title, body, id, title, body...]
  const parts = main.split(/<h2 id="([^"]*)"[^>]*>([\s\S]*?)<\/h2>/);
  index.push({ p: page, a: "", t: title, x: text(parts[0]).slice(0, 4000) });
  for (let i = 1; i + 2 < parts.length + 1; i += 3) {
    const t = text(parts[i + 1]);
    toc.push(`    - [${t.replace(/([\[\]])/g, "\\$1")}](${page}#${parts[i]})`);
    index.push({ p: page, a: parts[i], t: `${base.slice(0, 2)} · ${t}`, x: text(parts[i + 2] || "") });
  }
}
fs.writeFileSync(path.join(out, "search-index.js"),
  "// Made by tools/book/index.mjs: one entry per section.\nwindow.BOOK_INDEX = " +
  JSON.stringify(index) + ";\n");
fs.writeFileSync(tocMd, toc.join("\n") + "\n");
