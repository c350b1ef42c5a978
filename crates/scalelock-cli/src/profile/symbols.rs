//! Names for the code and data addresses of a program that has exited, from its own object
//! files: `function+0xoff` from `.symtab`/`.dynsym` (or a separate debug file found by
//! build-id), the source line from DWARF when present, else `object+0xoffset` with the offset
//! `addr2line -e object` takes (the link-time address).
//!
//! Addresses are mapped to objects with the copy of `/proc/PID/maps` the preload library wrote at
//! exit. This runs in the `scalelock` command after the program has exited, never in the
//! program.

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    /// The file, or `None` for anonymous memory (`[heap]`, `[stack]`, ...).
    pub path: Option<PathBuf>,
}

impl Mapping {
    /// Parses `start-end perms offset dev inode [path]`.
    pub fn parse(line: &str) -> Option<Mapping> {
        let mut f = line.split_whitespace();
        let (start, end) = f.next()?.split_once('-')?;
        let _perms = f.next()?;
        let offset = u64::from_str_radix(f.next()?, 16).ok()?;
        let _dev = f.next()?;
        let _inode = f.next()?;
        let rest: Vec<&str> = f.collect();
        let path = rest.join(" ");
        Some(Mapping {
            start: u64::from_str_radix(start, 16).ok()?,
            end: u64::from_str_radix(end, 16).ok()?,
            offset,
            path: (!path.is_empty() && path.starts_with('/')).then(|| PathBuf::from(path)),
        })
    }
}

/// A symbol of an object: link-time address, size (0: unknown) and demangled name.
#[derive(Clone, Debug)]
struct Sym {
    addr: u64,
    size: u64,
    name: String,
}

/// What is known of one object file.
struct ObjectInfo {
    /// `(p_vaddr, p_memsz, p_offset, p_filesz)` of each loadable segment.
    segments: Vec<(u64, u64, u64, u64)>,
    functions: Vec<Sym>,
    data: Vec<Sym>,
    dwarf: Option<addr2line::Loader>,
}

impl ObjectInfo {
    fn load(path: &Path) -> Option<ObjectInfo> {
        let bytes = std::fs::read(path).ok()?;
        let file = object::File::parse(&*bytes).ok()?;
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (s.address(), s.size(), off, size)
            })
            .collect();
        let mut functions = Vec::new();
        let mut data = Vec::new();
        collect_symbols(&file, &mut functions, &mut data);
        // A stripped object may have its symbols in a separate debug file.
        let mut debug_file = None;
        if let Ok(Some(id)) = file.build_id() {
            if id.len() > 1 {
                let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
                let p = PathBuf::from(format!(
                    "/usr/lib/debug/.build-id/{}/{}.debug",
                    &hex[..2],
                    &hex[2..]
                ));
                if p.is_file() {
                    debug_file = Some(p);
                }
            }
        }
        if let Some(p) = &debug_file {
            if let Ok(dbytes) = std::fs::read(p) {
                if let Ok(dfile) = object::File::parse(&*dbytes) {
                    collect_symbols(&dfile, &mut functions, &mut data);
                }
            }
        }
        for v in [&mut functions, &mut data] {
            v.sort_by_key(|s| (s.addr, std::cmp::Reverse(s.size)));
            v.dedup_by_key(|s| s.addr);
        }
        let has_dwarf = file.section_by_name(".debug_info").is_some() || debug_file.is_some();
        let dwarf = if has_dwarf {
            addr2line::Loader::new(debug_file.as_deref().unwrap_or(path)).ok()
        } else {
            None
        };
        Some(ObjectInfo {
            segments,
            functions,
            data,
            dwarf,
        })
    }

    /// The link-time address of file offset `off` (through the segment that maps it).
    fn vaddr_of_offset(&self, off: u64) -> Option<u64> {
        let seg = self
            .segments
            .iter()
            .find(|&&(_, _, o, sz)| (o & !0xfff) <= off && off < o + sz.max(1))
            .or_else(|| self.segments.first())?;
        Some(seg.0.wrapping_sub(seg.2).wrapping_add(off))
    }

    fn contains_vaddr(&self, v: u64) -> bool {
        self.segments
            .iter()
            .any(|&(a, sz, _, _)| a <= v && v < a.saturating_add(sz))
    }
}

fn collect_symbols(file: &object::File<'_>, functions: &mut Vec<Sym>, data: &mut Vec<Sym>) {
    for s in file.symbols().chain(file.dynamic_symbols()) {
        if !s.is_definition() || s.address() == 0 {
            continue;
        }
        let Ok(name) = s.name() else { continue };
        if name.is_empty() {
            continue;
        }
        let sym = Sym {
            addr: s.address(),
            size: s.size(),
            name: demangle(name),
        };
        match s.kind() {
            SymbolKind::Text => functions.push(sym),
            SymbolKind::Data | SymbolKind::Tls => data.push(sym),
            _ => {}
        }
    }
}

fn demangle(name: &str) -> String {
    addr2line::demangle_auto(std::borrow::Cow::Borrowed(name), None).into_owned()
}

/// The name of a code address.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CodeName {
    /// `function+0xoff`, or `object+0xoffset` when no symbol covers it, or the hexadecimal
    /// address when no object maps it.
    pub name: String,
    /// `file:line` from DWARF, when the object has it.
    pub source: Option<String>,
}

/// Names addresses of one exited process.
pub struct Symbolizer {
    maps: Vec<Mapping>,
    objects: HashMap<PathBuf, Option<(u64, ObjectInfo)>>,
}

impl Symbolizer {
    /// A symbolizer for the process whose memory map was `maps`.
    pub fn new(mut maps: Vec<Mapping>) -> Symbolizer {
        maps.sort_by_key(|m| m.start);
        Symbolizer {
            maps,
            objects: HashMap::new(),
        }
    }

    /// The object that holds `addr` and its load bias (runtime minus link-time address).
    fn object_of(&mut self, addr: u64) -> Option<(PathBuf, u64)> {
        let i = self
            .maps
            .iter()
            .position(|m| m.start <= addr && addr < m.end)?;
        let path = match &self.maps[i].path {
            Some(p) => p.clone(),
            // The zero-filled end of a data segment (.bss) follows its file-backed mapping.
            None => {
                let prev = self.maps.get(i.checked_sub(1)?)?;
                if prev.end != self.maps[i].start {
                    return None;
                }
                prev.path.clone()?
            }
        };
        let bias = self.load(&path)?;
        Some((path, bias))
    }

    /// Loads `path` once; returns its load bias.
    fn load(&mut self, path: &Path) -> Option<u64> {
        if !self.objects.contains_key(path) {
            let first = self
                .maps
                .iter()
                .filter(|m| m.path.as_deref() == Some(path))
                .min_by_key(|m| m.start)
                .cloned();
            let loaded = first.and_then(|m| {
                let info = ObjectInfo::load(path)?;
                let v = info.vaddr_of_offset(m.offset)?;
                Some((m.start.wrapping_sub(v), info))
            });
            self.objects.insert(path.to_path_buf(), loaded);
        }
        self.objects.get(path)?.as_ref().map(|(b, _)| *b)
    }

    /// Names a code address (a return address: its call is the instruction before it).
    pub fn code(&mut self, addr: u64) -> CodeName {
        let Some((path, bias)) = self.object_of(addr) else {
            return CodeName {
                name: format!("{addr:#x}"),
                source: None,
            };
        };
        let v = addr.wrapping_sub(bias);
        let Some(Some((_, info))) = self.objects.get(&path) else {
            return CodeName {
                name: format!("{addr:#x}"),
                source: None,
            };
        };
        // Looked up one byte back: a call that ends a function returns past its end.
        let probe = v.saturating_sub(1);
        let name = match lookup(&info.functions, probe) {
            Some(s) => format!("{}+{:#x}", s.name, v - s.addr),
            None => format!("{}+{v:#x}", short(&path)),
        };
        let source = info.dwarf.as_ref().and_then(|d| {
            let loc = d.find_location(probe).ok()??;
            Some(format!("{}:{}", loc.file?, loc.line?))
        });
        CodeName { name, source }
    }

    /// Names a data address by the symbol that holds it (a static lock), if any.
    pub fn data(&mut self, addr: u64) -> Option<String> {
        let (path, bias) = self.object_of(addr)?;
        let v = addr.wrapping_sub(bias);
        let Some(Some((_, info))) = self.objects.get(&path) else {
            return None;
        };
        if !info.contains_vaddr(v) {
            return None;
        }
        let s = lookup(&info.data, v)?;
        Some(if v == s.addr {
            s.name.clone()
        } else {
            format!("{}+{:#x}", s.name, v - s.addr)
        })
    }
}

/// The symbol that covers `v` (a sized symbol's extent, or the nearest unsized one before it).
fn lookup(syms: &[Sym], v: u64) -> Option<&Sym> {
    let i = syms.partition_point(|s| s.addr <= v).checked_sub(1)?;
    let s = syms.get(i)?;
    (s.size == 0 || v < s.addr.saturating_add(s.size)).then_some(s)
}

/// The object's file name, for `object+0xoffset`.
fn short(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_parse() {
        let m =
            Mapping::parse("5621f96cb000-5621f96cc000 r-xp 00001000 fe:00 10010733    /tmp/a b")
                .unwrap();
        assert_eq!(m.start, 0x5621f96cb000);
        assert_eq!(m.offset, 0x1000);
        assert_eq!(m.path.as_deref(), Some(Path::new("/tmp/a b")));
        let anon = Mapping::parse("7ff7a741a000-7ff7a741b000 ---p 00000000 00:00 0 ").unwrap();
        assert_eq!(anon.path, None);
        assert_eq!(
            Mapping::parse("562227fa6000-562227fc7000 rw-p 00000000 00:00 0  [heap]")
                .unwrap()
                .path,
            None
        );
    }

    #[test]
    fn unsized_and_sized_symbols_cover_what_they_should() {
        let syms = vec![
            Sym {
                addr: 0x100,
                size: 0x10,
                name: "a".into(),
            },
            Sym {
                addr: 0x200,
                size: 0,
                name: "b".into(),
            },
        ];
        assert_eq!(lookup(&syms, 0x105).map(|s| s.name.as_str()), Some("a"));
        assert!(lookup(&syms, 0x110).is_none());
        assert!(lookup(&syms, 0x50).is_none());
        assert_eq!(lookup(&syms, 0x300).map(|s| s.name.as_str()), Some("b"));
    }

    #[test]
    fn this_test_binary_names_its_own_functions() {
        let maps: Vec<Mapping> = std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter_map(Mapping::parse)
            .collect();
        let mut s = Symbolizer::new(maps);
        let f = this_test_binary_names_its_own_functions as *const () as usize as u64;
        let n = s.code(f + 1);
        assert!(
            n.name.contains("this_test_binary_names_its_own_functions"),
            "{n:?}"
        );
        static MARKER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let d = s.data(&MARKER as *const _ as u64).unwrap_or_default();
        assert!(d.contains("MARKER"), "{d}");
    }
}
