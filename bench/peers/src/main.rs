//! The rmcp side of `cargo xtask bench --peers`: one binary that is both an rmcp stdio server
//! with one tool, `echo`, whose result is its `text` argument, and the rmcp client that times
//! calls to it. Both run on rmcp's default runtime (tokio's multi-threaded one).
//!
//! `c2-bench-peers client --warm N --big M --cold K --text-bytes B` prints exactly one JSON
//! line on stdout: `{"warm_us":[...],"big_us":[...],"cold_us":[...]}`, each a list of
//! microseconds per call. A warm call is a `tools/call` on a connection already initialized;
//! a big one carries 64 KiB of text; a cold one spawns the server, initializes and makes the
//! first call. Affinity is whatever the process was started with: the xtask pins it (and so
//! the server it spawns) before starting it for a pinned round.

use std::process::ExitCode;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    InitializeResult, ServerCapabilities,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::TokioChildProcess;
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

/// The tool the server offers.
const TOOL: &str = "echo";

#[derive(Debug, Clone, Copy)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL {
            return Err(ErrorData::invalid_params(
                format!("no tool `{}`: this server has only `{TOOL}`", request.name),
                None,
            ));
        }
        let text = request
            .arguments
            .as_ref()
            .and_then(|args| args.get("text"))
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorData::invalid_params("`text` must be a string", None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[derive(Debug, Clone, Copy)]
struct Plan {
    warm: usize,
    big: usize,
    cold: usize,
    text_bytes: usize,
}

fn parse(args: &[String]) -> Result<Plan, String> {
    let mut plan = Plan {
        warm: 1_000,
        big: 200,
        cold: 10,
        text_bytes: 89,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a number"))?
            .parse::<usize>()
            .map_err(|e| format!("{flag}: {e}"))?;
        match flag.as_str() {
            "--warm" => plan.warm = value,
            "--big" => plan.big = value,
            "--cold" => plan.cold = value,
            "--text-bytes" => plan.text_bytes = value,
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    Ok(plan)
}

fn arguments(bytes: usize) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("text".to_owned(), json!("x".repeat(bytes)));
    map
}

type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

async fn connect() -> Result<Client, String> {
    let exe = std::env::current_exe().map_err(|e| format!("no current exe: {e}"))?;
    let mut command = tokio::process::Command::new(exe);
    command.arg("server");
    let transport =
        TokioChildProcess::new(command).map_err(|e| format!("cannot spawn the server: {e}"))?;
    ().serve(transport)
        .await
        .map_err(|e| format!("initialize failed: {e}"))
}

async fn call(client: &Client, args: &Map<String, Value>, bytes: usize) -> Result<(), String> {
    let params = CallToolRequestParams::new(TOOL).with_arguments(args.clone());
    let result = client
        .call_tool(params)
        .await
        .map_err(|e| format!("tools/call failed: {e}"))?;
    let echoed = result
        .content
        .first()
        .and_then(ContentBlock::as_text)
        .map_or(0, |t| t.text.len());
    if echoed != bytes {
        return Err(format!("the server echoed {echoed} bytes for {bytes}"));
    }
    Ok(())
}

fn micros(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e6
}

async fn client(plan: Plan) -> Result<Value, String> {
    const BIG: usize = 64 * 1024;
    let small = arguments(plan.text_bytes);
    let big = arguments(BIG);
    let mut cold_us = Vec::with_capacity(plan.cold);
    for _ in 0..plan.cold {
        let start = Instant::now();
        let client = connect().await?;
        call(&client, &small, plan.text_bytes).await?;
        cold_us.push(micros(start));
        client
            .cancel()
            .await
            .map_err(|e| format!("close failed: {e}"))?;
    }
    let client = connect().await?;
    for _ in 0..10 {
        call(&client, &small, plan.text_bytes).await?;
    }
    let mut warm_us = Vec::with_capacity(plan.warm);
    for _ in 0..plan.warm {
        let start = Instant::now();
        call(&client, &small, plan.text_bytes).await?;
        warm_us.push(micros(start));
    }
    let mut big_us = Vec::with_capacity(plan.big);
    for _ in 0..plan.big {
        let start = Instant::now();
        call(&client, &big, BIG).await?;
        big_us.push(micros(start));
    }
    client
        .cancel()
        .await
        .map_err(|e| format!("close failed: {e}"))?;
    Ok(json!({ "warm_us": warm_us, "big_us": big_us, "cold_us": cold_us }))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("server") => match Echo.serve(rmcp::transport::stdio()).await {
            Ok(service) => service
                .waiting()
                .await
                .map(|_| None)
                .map_err(|e| format!("server failed: {e}")),
            Err(e) => Err(format!("server initialize failed: {e}")),
        },
        Some("client") => match parse(&args[1..]) {
            Ok(plan) => client(plan).await.map(Some),
            Err(e) => Err(e),
        },
        _ => Err("usage: c2-bench-peers server | client [--warm N] [--big N] [--cold N] [--text-bytes N]".to_owned()),
    };
    match outcome {
        Ok(Some(doc)) => {
            println!("{doc}");
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("c2-bench-peers: {message}");
            ExitCode::FAILURE
        }
    }
}
