-- links.lua - pandoc filter of the web book (tools/book/build.sh).
--
-- Metadata it reads (set with -M by build.sh):
--   chapter   this page's chapter number, "03" (bare file names such as
--             `ddp.h` are looked up in that chapter's lab folder)
--   files     a file listing the repository's files, one path a line
--   linked    a file to which every repository path linked is appended, so
--             that build.sh renders just those into the book
--   print     "1" in the single-page version: a chapter is an anchor there
--   prefix    ids' prefix in the single-page version ("c03-")
--
-- What it does:
--   * a heading "## 3. Bucketing" gets the id sec-3 ("### 3.2 ..." sec-3.2):
--     the section numbers the labs and tests cite, as the chapters write
--     them, become stable anchors;
--   * inline code that names a file or folder of the repository
--     (`labs/03-data-parallel/ddp.c`, `dt/comm.h`, or `ddp.h` of this
--     chapter's lab) becomes a link to that file's page in the book;
--   * "chapter 08" becomes a link to chapter 08's page; code blocks are
--     focusable (a keyboard scrolls a wide one);
--   * a link to a chapter's Markdown (`hints/03.md`, `08-zero.md`) goes to
--     its page, and one to another file of the repository to that file's.

local meta_chapter, files_path, linked_path, print_mode, prefix = "", nil, nil, false, ""
local files = {}      -- path -> true, for files
local dirs = {}       -- path/ -> true, for every folder above a file
local chapters = {}   -- "03" -> "03-data-parallel"
local lab_dir = nil

local function str(v) return v and pandoc.utils.stringify(v) or nil end

local function load(m)
  meta_chapter = str(m.chapter) or ""
  files_path, linked_path = str(m.files), str(m.linked)
  print_mode = str(m.print) == "1"
  prefix = str(m.prefix) or ""
  if files_path then
    for line in io.lines(files_path) do
      files[line] = true
      local d = line:match("^(.*)/[^/]*$")
      while d do
        dirs[d .. "/"] = true
        d = d:match("^(.*)/[^/]*$")
      end
      local nn, stem = line:match("^chapters/(%d%d)%-([^/]*)%.md$")
      if nn then chapters[nn] = nn .. "-" .. stem end
      local ln, ls = line:match("^labs/(%d%d)%-([^/]*)/")
      if ln == meta_chapter then lab_dir = "labs/" .. ln .. "-" .. ls .. "/" end
    end
  end
end

-- The repository path that inline code names, or nil.
local function resolve(text)
  if files[text] or dirs[text] then return text end
  if text:match("^dt/[%w_]+%.h$") and files["lib/include/" .. text] then
    return "lib/include/" .. text
  end
  if lab_dir and text:match("^[%w_]+%.[ch]$") and files[lab_dir .. text] then
    return lab_dir .. text
  end
  return nil
end

local function record(path)
  if not linked_path then return end
  local f = io.open(linked_path, "a")
  f:write(path, "\n")
  f:close()
end

-- The book's page of a repository path: src/<path>.html, a folder's
-- src/<path>index.html.
local function src_href(path)
  if path:sub(-1) == "/" then return "src/" .. path .. "index.html" end
  return "src/" .. path .. ".html"
end

local function chapter_href(nn)
  if print_mode then return "#c" .. nn .. "-top" end
  return chapters[nn] .. ".html"
end

function Header(h)
  local n = pandoc.utils.stringify(h.content):match("^(%d+[%.%d]*)%s")
  if n then
    n = n:gsub("%.$", "")
    h.identifier = prefix .. "sec-" .. n
  elseif prefix ~= "" and h.identifier ~= "" then
    h.identifier = prefix .. h.identifier
  end
  return h
end

function Code(c)
  local path = resolve(c.text)
  if not path then return nil end
  if print_mode then return nil end   -- the printed book keeps plain names
  record(path)
  return pandoc.Link({c}, src_href(path), "", {class = "repo"})
end

function Link(l)
  local t, frag = l.target:match("^([^#]*)(#?.*)$")
  if t == "" or t:match("^%a[%w+.-]*:") then return nil end   -- in-page or a URL
  local hn = t:match("^hints/(%d%d)%.md$")
  local cn = t:match("^(%d%d)%-[^/]*%.md$")
  if hn then
    l.target = print_mode and ("#c" .. hn .. "-hints") or (hn .. "-hints.html" .. frag)
  elseif cn and chapters[cn] then
    l.target = print_mode and ("#c" .. cn .. "-top") or (chapters[cn] .. ".html" .. frag)
  else
    local path = t:gsub("^%.%./", "")
    if t == path then path = "chapters/" .. t end
    if not (files[path] or dirs[path]) then return nil end   -- left for the test to catch
    if print_mode then return l.content end
    record(path)
    l.target = src_href(path)
  end
  return l
end

-- A code block scrolls sideways when long: focusable, so that a keyboard
-- can scroll it too.
function CodeBlock(cb)
  cb.attributes.tabindex = "0"
  return cb
end

-- A displayed formula may be wider than the page: it scrolls in a
-- focusable box, as code does.
function Math(m)
  if m.mathtype ~= "DisplayMath" then return nil end
  return pandoc.Span({m}, {class = "display-math", tabindex = "0"})
end

function Inlines(inl)
  local out = {}
  local i = 1
  while i <= #inl do
    local a, b, c = inl[i], inl[i + 1], inl[i + 2]
    if a.t == "Str" and a.text:match("^[Cc]hapters?$") and b and b.t == "Space"
       and c and c.t == "Str" then
      local nn, rest = c.text:match("^(%d%d)(.*)$")
      if nn and chapters[nn] and nn ~= meta_chapter then
        out[#out + 1] = a
        out[#out + 1] = b
        out[#out + 1] = pandoc.Link({pandoc.Str(nn)}, chapter_href(nn), "", {class = "chapter"})
        if rest ~= "" then out[#out + 1] = pandoc.Str(rest) end
        i = i + 3
        goto continue
      end
    end
    out[#out + 1] = a
    i = i + 1
    ::continue::
  end
  return out
end

return {{Meta = load}, {Header = Header, Code = Code, Link = Link, CodeBlock = CodeBlock, Math = Math, Inlines = Inlines}}
