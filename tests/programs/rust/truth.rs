// Ground truth, as the C++ and Go workloads record it (examples/target-app/
// workload_support.h, tests/programs/go/truth.go): per function, calls that
// returned or were abandoned (a panic unwound through them), and the log2
// usec histogram of the durations the caller measured around each call.
// Every traced function times its own body too, so each call also says how
// low a tracer may see it: no lower than its body's row (the probes fire
// around the body, inside the caller's measurement). Written as JSON by hand:
// the program uses nothing but std.
use std::fmt::Write as _;
use std::time::Instant;

// Rows as libbpf-tools prints a usec histogram: row 0 holds 0 and 1 us, row r
// holds [2^r, 2^(r+1) - 1] us of floor(duration_ns / 1000).
const LOG2_ROWS: usize = 48;

pub fn usec_row(duration_ns: u64) -> usize {
    let usec = duration_ns / 1000;
    if usec < 2 {
        return 0;
    }
    ((63 - usec.leading_zeros()) as usize).min(LOG2_ROWS - 1)
}

// What a traced function measures of itself: begin() first in its body, end()
// last on the path that returns (never on a path that panics out).
#[derive(Default)]
pub struct Body {
    start: Option<Instant>,
    ns: u64,
    ended: bool,
}

impl Body {
    pub fn begin(&mut self) {
        self.start = Some(Instant::now());
    }

    pub fn end(&mut self) {
        if let Some(start) = self.start {
            self.ns = start.elapsed().as_nanos() as u64;
            self.ended = true;
        }
    }
}

pub struct FunctionTruth {
    pub name: String,
    returned: u64,
    abandoned: u64,
    sum_ns: u64,
    // The sum of the calls' bodies, each capped at its call: a tracer's sum
    // is no less.
    body_sum_ns: u64,
    min_ns: Option<u64>,
    max_ns: u64,
    rows: [u64; LOG2_ROWS],
    // [row][lowest row]: calls whose body alone fell in a lower row.
    body_lower: Vec<[u64; LOG2_ROWS]>,
}

impl FunctionTruth {
    pub fn new(name: String) -> FunctionTruth {
        FunctionTruth {
            name,
            returned: 0,
            abandoned: 0,
            sum_ns: 0,
            body_sum_ns: 0,
            min_ns: None,
            max_ns: 0,
            rows: [0; LOG2_ROWS],
            body_lower: vec![[0; LOG2_ROWS]; LOG2_ROWS],
        }
    }

    pub fn record_return(&mut self, duration_ns: u64, body: &Body) {
        assert!(body.ended, "{} returned without timing its body", self.name);
        self.returned += 1;
        self.sum_ns += duration_ns;
        self.min_ns = Some(self.min_ns.map_or(duration_ns, |min| min.min(duration_ns)));
        self.max_ns = self.max_ns.max(duration_ns);
        let row = usec_row(duration_ns);
        self.rows[row] += 1;
        let body_ns = body.ns.min(duration_ns);
        self.body_sum_ns += body_ns;
        let body_row = usec_row(body_ns);
        if body_row < row {
            self.body_lower[row][body_row] += 1;
        }
    }

    pub fn record_abandoned(&mut self) {
        self.abandoned += 1;
    }

    fn to_json(&self) -> String {
        let mut rows = Vec::new();
        for row in 0..LOG2_ROWS {
            if self.rows[row] == 0 {
                continue;
            }
            let lower: Vec<String> = (0..row)
                .filter(|&lowest| self.body_lower[row][lowest] != 0)
                .map(|lowest| format!("[{}, {}]", lowest, self.body_lower[row][lowest]))
                .collect();
            let low_us: u64 = if row == 0 { 0 } else { 1 << row };
            rows.push(format!(
                "{{\"row\": {}, \"low_us\": {}, \"high_us\": {}, \"count\": {}, \
                 \"near_edge\": 0, \"disturbed\": 0, \"body_lower\": [{}]}}",
                row,
                low_us,
                (2u64 << row) - 1,
                self.rows[row],
                lower.join(", ")
            ));
        }
        format!(
            "{{\"name\": {}, \"calls\": {}, \"returned\": {}, \"abandoned\": {}, \"sum_ns\": {}, \
             \"timed_bodies\": {}, \"body_sum_ns\": {}, \"min_ns\": {}, \"max_ns\": {}, \
             \"log2_usec\": [{}]}}",
            json_string(&self.name),
            self.returned + self.abandoned,
            self.returned,
            self.abandoned,
            self.sum_ns,
            self.returned,
            self.body_sum_ns,
            self.min_ns.unwrap_or(0),
            self.max_ns,
            rows.join(", ")
        )
    }
}

fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// Writes the report through a rename, so that a reader never sees half a file.
pub fn write_truth(
    path: &str,
    scenarios: &[&str],
    functions: &[&FunctionTruth],
) -> std::io::Result<()> {
    let scenario_list: Vec<String> = scenarios.iter().map(|s| json_string(s)).collect();
    let function_list: Vec<String> = functions.iter().map(|f| f.to_json()).collect();
    let text = format!(
        "{{\"program\": \"rust-workload\", \"pid\": {}, \"scenarios\": [{}], \"functions\": [\n{}\n]}}\n",
        std::process::id(),
        scenario_list.join(", "),
        function_list.join(",\n")
    );
    let partial = format!("{}.partial", path);
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, path)
}
