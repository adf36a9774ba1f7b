// `geode gateway` driven by the official OpenAI TypeScript/JavaScript SDK (`openai` on npm) and
// its zod helpers, unmodified, under Node's own test runner. Run by
// crates/geode-cli/tests/it/e2e_gateway_sdk.rs against a gateway in front of geode-fakes
// providers: `openai-payg` answers a valid Decision, `glm-payg` (JSON mode only) an invalid one,
// `flaky` an invalid one first and valid ones after.
// NODE_PATH points at the pinned packages (scripts/install-node-sdk.sh).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(process.env.GEODE_NODE_MODULES + "/");
const { default: OpenAI } = await import(require.resolve("openai"));
const { zodResponseFormat, zodTextFormat, zodFunction } = await import(require.resolve("openai/helpers/zod"));
const { z } = await import(require.resolve("zod"));

const Decision = z.object({ decision: z.enum(["accept", "reject"]), reason: z.string() });
const client = new OpenAI({
  baseURL: process.env.GEODE_GATEWAY_URL + "/v1",
  apiKey: process.env.GEODE_GATEWAY_KEY,
  maxRetries: 0,
});
const messages = [
  { role: "system", content: "You review pull requests." },
  { role: "user", content: "Decide." },
];
const good = { decision: "accept", reason: "the tests pass" };

test("chat.completions.parse with the zod helper gives the parsed value and the ledger", async () => {
  const done = await client.chat.completions.parse({
    model: "openai-payg/gpt-5-mini",
    messages,
    response_format: zodResponseFormat(Decision, "decision"),
  });
  assert.deepEqual(done.choices[0].message.parsed, good);
  assert.equal(done.geode.ledger.adapter, "openai-payg");
  assert.equal(done.geode.ledger.full_validation.valid, true);
});

test("the ledger headers read through withResponse()", async () => {
  const { data, response } = await client.chat.completions
    .parse({ model: "openai-payg", messages, response_format: zodResponseFormat(Decision, "decision") })
    .withResponse();
  assert.equal(response.headers.get("x-geode-mode"), "strict");
  assert.equal(response.headers.get("x-geode-guarantee"), "enforced");
  assert.equal(response.headers.get("x-geode-validated"), "true");
  assert.deepEqual(data.choices[0].message.parsed, good);
});

test("a route that cannot enforce is the SDK's BadRequestError with the code", async () => {
  await assert.rejects(
    client.chat.completions.parse(
      { model: "glm-payg", messages, response_format: zodResponseFormat(Decision, "decision") },
      { headers: { "x-geode-require": "enforced" } },
    ),
    (e) => e instanceof OpenAI.BadRequestError && e.code === "schema_not_enforceable",
  );
});

test("an answer invalid after the retry is the SDK's UnprocessableEntityError", async () => {
  await assert.rejects(
    client.chat.completions.parse({ model: "glm-payg", messages, response_format: zodResponseFormat(Decision, "decision") }),
    (e) => e instanceof OpenAI.UnprocessableEntityError && e.code === "schema_validation_failed",
  );
});

test("responses.parse with zodTextFormat", async () => {
  const done = await client.responses.parse({
    model: "openai-payg",
    input: "Decide.",
    text: { format: zodTextFormat(Decision, "decision") },
  });
  assert.deepEqual(done.output_parsed, good);
});

/** Streams a Decision from `model` through the zod helper; checks what it assembled and parsed. */
async function streamsTheCheckedValue(model) {
  const stream = client.chat.completions.stream({
    model,
    messages,
    response_format: zodResponseFormat(Decision, "decision"),
  });
  let content = "";
  for await (const chunk of stream) content += chunk.choices[0]?.delta?.content ?? "";
  const final = await stream.finalChatCompletion();
  assert.deepEqual(JSON.parse(content), good);
  assert.deepEqual(final.choices[0].message.parsed, good);
}

test("a chat stream through the SDK's stream helper", async () => {
  await streamsTheCheckedValue("openai-payg");
});

test("a chat stream that needed the retry assembles only the checked value", async () => {
  // `flaky` answers a wrong enum value first: the zod helper parses the retry's text alone.
  await streamsTheCheckedValue("flaky");
});

test("a responses stream through the SDK's stream helper", async () => {
  const stream = client.responses.stream({
    model: "openai-payg",
    input: "Decide.",
    text: { format: zodTextFormat(Decision, "decision") },
  });
  const kinds = [];
  for await (const event of stream) kinds.push(event.type);
  const final = await stream.finalResponse();
  assert.equal(kinds.at(-1), "response.completed");
  assert.deepEqual(final.output_parsed, good);
});

test("a zodFunction tool call parses, and its result continues to a parsed answer", async () => {
  const tools = [zodFunction({ name: "get_weather", parameters: z.object({ city: z.string() }) })];
  const format = zodResponseFormat(Decision, "decision");
  const first = await client.chat.completions.parse({ model: "tooled", messages, response_format: format, tools });
  const choice = first.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  const call = choice.message.tool_calls[0];
  assert.equal(call.function.name, "get_weather");
  assert.equal(typeof call.function.parsed_arguments.city, "string");
  const second = await client.chat.completions.parse({
    model: "tooled",
    messages: [...messages, choice.message, { role: "tool", tool_call_id: call.id, content: "clear" }],
    response_format: format,
    tools,
  });
  assert.equal(second.choices[0].finish_reason, "stop");
  assert.ok(["accept", "reject"].includes(second.choices[0].message.parsed.decision));
});

test("a conversation continued by previous_response_id, then retrieved and deleted", async () => {
  const first = await client.responses.create({
    model: "openai-payg",
    input: [{ role: "user", content: "Remember the word heliotrope." }],
  });
  assert.equal(first.status, "completed");
  assert.equal(first.store, true);
  const second = await client.responses.create({
    model: "openai-payg",
    previous_response_id: first.id,
    input: "Which word was it?",
  });
  assert.equal(second.status, "completed");
  assert.equal(second.previous_response_id, first.id);
  assert.notEqual(second.id, first.id);
  const again = await client.responses.retrieve(first.id);
  assert.equal(again.id, first.id);
  assert.equal(again.output_text, first.output_text);
  const items = await client.responses.inputItems.list(first.id);
  assert.deepEqual(items.data.map((i) => i.type), ["message"]);
  await client.responses.delete(first.id);
  await assert.rejects(client.responses.retrieve(first.id), (e) => e instanceof OpenAI.NotFoundError);
});

const PNG_DATA_URL =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR42mP4DwQACfsD/Wj6HMwAAAAASUVORK5CYII=";
const PDF_DATA_URL = "data:application/pdf;base64,JVBERi0xLjQKMSAwIG9iajw8Pj5lbmRvYmoKdHJhaWxlcjw8Pj4KJSVFT0YK";

test("an image and a PDF in chat and responses parse, and the ledger names them", async () => {
  const done = await client.chat.completions.parse({
    model: "openai-payg/gpt-5-mini",
    messages: [{ role: "user", content: [
      { type: "text", text: "Decide on this screenshot and this diff." },
      { type: "image_url", image_url: { url: PNG_DATA_URL } },
      { type: "file", file: { filename: "diff.pdf", file_data: PDF_DATA_URL } },
    ] }],
    response_format: zodResponseFormat(Decision, "decision"),
  });
  assert.deepEqual(done.choices[0].message.parsed, good);
  assert.deepEqual(done.geode.ledger.inputs.map((p) => p.media_type), ["image/png", "application/pdf"]);
  const response = await client.responses.parse({
    model: "openai-payg/gpt-5-mini",
    input: [{ role: "user", content: [
      { type: "input_text", text: "Decide on this screenshot." },
      { type: "input_image", image_url: PNG_DATA_URL, detail: "auto" },
      { type: "input_file", filename: "diff.pdf", file_data: PDF_DATA_URL },
    ] }],
    text: { format: zodTextFormat(Decision, "decision") },
  });
  assert.deepEqual(response.output_parsed, good);
});

test("an image a route cannot take is the SDK's BadRequestError with the code", async () => {
  await assert.rejects(
    client.chat.completions.create({
      model: "glm-payg",
      messages: [{ role: "user", content: [
        { type: "text", text: "Decide." },
        { type: "image_url", image_url: { url: PNG_DATA_URL } },
      ] }],
    }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === "unsupported_input",
  );
});
