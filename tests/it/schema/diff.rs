//! A small line diff for failure messages: the longest common subsequence of the two
//! texts' lines, printed as unified-style hunks with a few lines of context.

/// Lines of context around each change.
const CONTEXT: usize = 3;

enum Op<'a> {
    Same(&'a str),
    Removed(&'a str),
    Added(&'a str),
}

/// `old` → `new` as `-`/`+`/` ` lines in hunks headed `@@ -line +line @@`.
pub fn unified(old: &str, new: &str) -> String {
    let ops = script(
        &old.lines().collect::<Vec<_>>(),
        &new.lines().collect::<Vec<_>>(),
    );
    let changed: Vec<usize> = (0..ops.len())
        .filter(|&i| !matches!(ops[i], Op::Same(_)))
        .collect();
    let mut out = String::new();
    let mut i = 0;
    while i < changed.len() {
        // A hunk: changes whose context windows touch, with CONTEXT lines either side.
        let mut last = i;
        while last + 1 < changed.len() && changed[last + 1] - changed[last] <= 2 * CONTEXT {
            last += 1;
        }
        let start = changed[i].saturating_sub(CONTEXT);
        let end = (changed[last] + CONTEXT + 1).min(ops.len());
        let (old_line, new_line) = line_numbers(&ops[..start]);
        out.push_str(&format!("@@ -{} +{} @@\n", old_line + 1, new_line + 1));
        for op in &ops[start..end] {
            let (mark, line) = match op {
                Op::Same(l) => (' ', l),
                Op::Removed(l) => ('-', l),
                Op::Added(l) => ('+', l),
            };
            out.push_str(&format!("{mark}{line}\n"));
        }
        i = last + 1;
    }
    out
}

/// How many old and new lines `ops` cover.
fn line_numbers(ops: &[Op]) -> (usize, usize) {
    ops.iter().fold((0, 0), |(o, n), op| match op {
        Op::Same(_) => (o + 1, n + 1),
        Op::Removed(_) => (o + 1, n),
        Op::Added(_) => (o, n + 1),
    })
}

/// The edit script from `a` to `b` by dynamic programming on the longest common
/// subsequence (quadratic, fine for files of a few thousand lines).
fn script<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let (n, m) = (a.len(), b.len());
    // lcs[i][j]: length of the LCS of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut ops) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push(Op::Same(a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(Op::Removed(a[i]));
            i += 1;
        } else {
            ops.push(Op::Added(b[j]));
            j += 1;
        }
    }
    ops
}

#[test]
fn diff_shows_the_changed_line_in_context() {
    let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\n";
    let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\n";
    assert_eq!(
        unified(old, new),
        "@@ -2 +2 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
    );
    assert_eq!(unified(old, old), "");
}
