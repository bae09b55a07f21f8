package llm

// geminiCLIWant holds the facts of each model call of each gemini-cli
// .responses file, in file order, read off the files: every text and
// thought joined across chunks (long ones by their ends and length),
// every call with its id and arguments, signatures by their start and
// length, the finish reason, the last usageMetadata normalized.
var geminiCLIWant = map[string][]wantResponse{
	"browser-agent.persistent-session.responses": {
		{ // call 0: generateContentStream
			Parts: []wantPart{
				{Type: PartText, Text: "I will invoke the browser agent to get the page title of example.com."},
				{Type: PartToolCall, ID: "1zgnzmz8", Name: "invoke_agent", Input: `{"prompt":"Navigate to example.com and return the page title.","agent_name":"browser_agent"}`, Signature: "EpgDCpUDAb4+", SigLen: 548},
			},
			StopReason: "STOP", Usage: Usage{Input: 10491, Output: 132, CacheRead: 8126, Reasoning: 80}, Complete: true, Events: 3,
		},
		{ // call 1: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "q9a8dwir", Name: "list_pages", Input: `{"wait_for_previous":true}`, Signature: "Et4DCtsDAb4+", SigLen: 644},
			},
			StopReason: "STOP", Usage: Usage{Input: 8627, Output: 115, CacheRead: 8066, Reasoning: 97}, Complete: true, Events: 2,
		},
		{ // call 2: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "q8jik45z", Name: "new_page", Input: `{"url":"http://example.com","wait_for_previous":true}`, Signature: "EokFCoYFAb4+", SigLen: 872},
			},
			StopReason: "STOP", Usage: Usage{Input: 8766, Output: 172, CacheRead: 8059, Reasoning: 144}, Complete: true, Events: 2,
		},
		{ // call 3: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "chnx16bz", Name: "navigate_page", Input: `{"wait_for_previous":true,"url":"https://example.com","type":"url"}`, Signature: "Et4DCtsDAb4+", SigLen: 644},
			},
			StopReason: "STOP", Usage: Usage{Input: 8967, Output: 129, CacheRead: 8053, Reasoning: 95}, Complete: true, Events: 2,
		},
		{ // call 4: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "dh6nh7uc", Name: "navigate_page", Input: `{"wait_for_previous":true,"url":"http://example.com","type":"url"}`, Signature: "EqkFCqYFAb4+", SigLen: 912},
			},
			StopReason: "STOP", Usage: Usage{Input: 9159, Output: 181, CacheRead: 8047, Reasoning: 147}, Complete: true, Events: 2,
		},
		{ // call 5: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "prantos8", Name: "take_snapshot", Input: `{"wait_for_previous":true}`, Signature: "EogECoUEAb4+", SigLen: 700},
			},
			StopReason: "STOP", Usage: Usage{Input: 9403, Output: 140, CacheRead: 8043, Reasoning: 122}, Complete: true, Events: 2,
		},
		{ // call 6: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "r79qt569", Name: "click", Input: `{"wait_for_previous":true,"uid":"1_12"}`, Signature: "EogCCoUCAb4+", SigLen: 356},
			},
			StopReason: "STOP", Usage: Usage{Input: 9815, Output: 65, CacheRead: 8041, Reasoning: 40}, Complete: true, Events: 2,
		},
		{ // call 7: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "3f6suk04", Name: "take_snapshot", Input: `{"wait_for_previous":true}`, Signature: "EpEBCo4BAb4+", SigLen: 200},
			},
			StopReason: "STOP", Usage: Usage{Input: 9896, Output: 36, CacheRead: 8034, Reasoning: 18}, Complete: true, Events: 2,
		},
		{ // call 8: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "4hcr39ek", Name: "click", Input: `{"wait_for_previous":true,"uid":"2_3"}`, Signature: "EpoBCpcBAb4+", SigLen: 212},
			},
			StopReason: "STOP", Usage: Usage{Input: 10329, Output: 48, CacheRead: 8033, Reasoning: 24}, Complete: true, Events: 2,
		},
		{ // call 9: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "a7323k6z", Name: "take_snapshot", Input: `{"wait_for_previous":true}`, Signature: "EoABCn4Bvj72", SigLen: 176},
			},
			StopReason: "STOP", Usage: Usage{Input: 10156, Output: 34, CacheRead: 8022, Reasoning: 16}, Complete: true, Events: 2,
		},
		{ // call 10: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "81koewoz", Name: "complete_task", Input: `{"result":{"success":true,"summary":"Successfully navigated to example.com and found the page title: \"Example Domain\""},"wait_for_previous":true}`, Signature: "EoYBCoMBAb4+", SigLen: 184},
			},
			StopReason: "STOP", Usage: Usage{Input: 10309, Output: 59, CacheRead: 8017, Reasoning: 14}, Complete: true, Events: 2,
		},
		{ // call 11: generateContentStream
			Parts: []wantPart{
				{Type: PartText, Text: "I will invoke the browser agent a second time to check for links on example.com."},
				{Type: PartToolCall, ID: "rn9rpbw6", Name: "invoke_agent", Input: `{"prompt":"Navigate to example.com and list all the links on the page.","agent_name":"browser_agent"}`, Signature: "EosCCogCAb4+", SigLen: 360},
			},
			StopReason: "STOP", Usage: Usage{Input: 10683, Output: 97, CacheRead: 8119, Reasoning: 39}, Complete: true, Events: 4,
		},
		{ // call 12: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "vqfkekqm", Name: "list_pages", Input: `{"wait_for_previous":true}`, Signature: "ErUGCrIGAb4+", SigLen: 1100},
			},
			StopReason: "STOP", Usage: Usage{Input: 8630, Output: 193, CacheRead: 8066, Reasoning: 175}, Complete: true, Events: 2,
		},
		{ // call 13: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "dsy0oh63", Name: "navigate_page", Input: `{"type":"url","url":"https://example.com","wait_for_previous":true}`, Signature: "ErECCq4CAb4+", SigLen: 412},
			},
			StopReason: "STOP", Usage: Usage{Input: 8847, Output: 93, CacheRead: 8060, Reasoning: 59}, Complete: true, Events: 2,
		},
		{ // call 14: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "spfjmlgz", Name: "navigate_page", Input: `{"type":"url","wait_for_previous":true,"url":"http://example.com"}`, Signature: "EqIECp8EAb4+", SigLen: 732},
			},
			StopReason: "STOP", Usage: Usage{Input: 8997, Output: 143, CacheRead: 8054, Reasoning: 109}, Complete: true, Events: 2,
		},
		{ // call 15: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "xa6m1ifg", Name: "new_page", Input: `{"url":"http://example.com","wait_for_previous":true}`, Signature: "EooGCocGAb4+", SigLen: 1044},
			},
			StopReason: "STOP", Usage: Usage{Input: 9197, Output: 190, CacheRead: 8048, Reasoning: 162}, Complete: true, Events: 2,
		},
		{ // call 16: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "1pxqeqmn", Name: "new_page", Input: `{"url":"https://www.example.com","wait_for_previous":true}`, Signature: "Eo4FCosFAb4+", SigLen: 876},
			},
			StopReason: "STOP", Usage: Usage{Input: 9416, Output: 168, CacheRead: 8043, Reasoning: 138}, Complete: true, Events: 2,
		},
		{ // call 17: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 460, Prefix: "**Clarifying Domain Inclusion**\n\nOkay, s", Suffix: "ll. It's a key point!\n\n\n"},
				{Type: PartToolCall, ID: "5fmzjlk4", Name: "take_snapshot", Input: `{"wait_for_previous":true}`, Signature: "EvQKCvEKAb4+", SigLen: 1868},
			},
			StopReason: "STOP", Usage: Usage{Input: 9611, Output: 325, CacheRead: 8038, Reasoning: 307}, Complete: true, Events: 3,
		},
		{ // call 18: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "w39u7j53", Name: "click", Input: `{"wait_for_previous":true,"uid":"1_12"}`, Signature: "ErkBCrYBAb4+", SigLen: 252},
			},
			StopReason: "STOP", Usage: Usage{Input: 10208, Output: 52, CacheRead: 8039, Reasoning: 27}, Complete: true, Events: 2,
		},
		{ // call 19: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "qzaod8vn", Name: "take_snapshot", Input: `{"wait_for_previous":true}`, Signature: "En4KfAG+Pvb7", SigLen: 172},
			},
			StopReason: "STOP", Usage: Usage{Input: 10276, Output: 34, CacheRead: 8032, Reasoning: 16}, Complete: true, Events: 2,
		},
		{ // call 20: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "izwyu21z", Name: "click", Input: `{"uid":"2_3","wait_for_previous":true}`, Signature: "EpgBCpUBAb4+", SigLen: 208},
			},
			StopReason: "STOP", Usage: Usage{Input: 10707, Output: 45, CacheRead: 8031, Reasoning: 21}, Complete: true, Events: 2,
		},
		{ // call 21: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "u9v4ngts", Name: "wait_for", Input: `{"wait_for_previous":true,"text":["Example Domain"]}`, Signature: "ErwBCrkBAb4+", SigLen: 256},
			},
			StopReason: "STOP", Usage: Usage{Input: 10531, Output: 51, CacheRead: 8021, Reasoning: 26}, Complete: true, Events: 2,
		},
		{ // call 22: generateContentStream
			Parts: []wantPart{
				{Type: PartToolCall, ID: "en5wzv6a", Name: "take_snapshot", Input: `{"wait_for_previous":true}`, Signature: "ErMBCrABAb4+", SigLen: 244},
			},
			StopReason: "STOP", Usage: Usage{Input: 10605, Output: 43, CacheRead: 8015, Reasoning: 25}, Complete: true, Events: 2,
		},
		{ // call 23: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 191, Prefix: "**Analyzing the Links**\n\nI've located a ", Suffix: "cking for more links.\n\n\n"},
				{Type: PartToolCall, ID: "2lza53qd", Name: "evaluate_script", Input: `{"wait_for_previous":true,"function":"() => {\n  return Array.from(document.querySelectorAll('a')).map(a => ({\n    text: a.innerText,\n    href: a.href\n  }));\n}"}`, Signature: "EsEKCr4KAb4+", SigLen: 1800},
			},
			StopReason: "STOP", Usage: Usage{Input: 10767, Output: 376, CacheRead: 8010, Reasoning: 312}, Complete: true, Events: 3,
		},
		{ // call 24: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 191, Prefix: "**Clarifying My Findings**\n\nI confirmed ", Suffix: " task's instructions.\n\n\n"},
				{Type: PartToolCall, ID: "1lqryjfq", Name: "complete_task", Input: `{"result":{"success":true,"summary":"The following link was found on the example.com page:\n- [Learn more](https://iana.org/domains/example)"},"wait_for_previous":true}`, Signature: "EqcLCqQLAb4+", SigLen: 1936},
			},
			StopReason: "STOP", Usage: Usage{Input: 10827, Output: 396, CacheRead: 8004, Reasoning: 339}, Complete: true, Events: 3,
		},
		{ // call 25: generateContentStream
			Parts: []wantPart{
				{Type: PartText, Len: 134, Prefix: "The page title of example.com is \"Exampl", Suffix: "ana.org/domains/example)", Signature: "EtsCCtgCAb4+", SigLen: 468},
			},
			StopReason: "STOP", Usage: Usage{Input: 10850, Output: 104, CacheRead: 8113, Reasoning: 66}, Complete: true, Events: 4,
		},
	},
	"flicker-detector.max-height.responses": {
		{ // call 0: generateContent
			Parts: []wantPart{
				{Type: PartText, Len: 262, Prefix: "{\n  \"reasoning\": \"The user is asking for", Suffix: "model_choice\": \"flash\"\n}"},
			},
			StopReason: "STOP", Usage: Usage{Input: 1173, Output: 171, Reasoning: 112}, Complete: true, Events: 0,
		},
		{ // call 1: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 220, Prefix: "**Locating a fun fact**\n\nI'm now searchi", Suffix: "piece of information.\n\n\n"},
				{Type: PartToolCall, Name: "google_web_search", Input: `{"query":"fun fact"}`, Signature: "CikB0e2Kb1vY", SigLen: 268},
			},
			StopReason: "STOP", Usage: Usage{Input: 12226, Output: 46, Reasoning: 29}, Complete: true, Events: 2,
		},
		{ // call 2: generateContent
			Parts: []wantPart{
				{Type: PartText, Len: 197, Prefix: "Here's a fun fact: A day on Venus is lon", Suffix: "is about 225 Earth days."},
				{Type: PartOther, RawPrefix: `{"groundingMetadata":{"searchEntryPoint":{"renderedContent":`, RawSfx: `:[0]}],"webSearchQueries":["fun fact"]}}`},
			},
			StopReason: "STOP", Usage: Usage{Input: 16393, Output: 75, CacheRead: 5360, Reasoning: 10}, Complete: true, Events: 0,
		},
	},
	"hooks-system.allow-tool.responses": {
		{ // call 0: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 379, Prefix: "**Formulating the Write Operation**\n\nOka", Suffix: "esired output string.\n\n\n"},
				{Type: PartToolCall, Name: "write_file", Input: `{"content":"Approved content","file_path":"approved.txt"}`, Signature: "CiQBcsjafF4N", SigLen: 480},
			},
			StopReason: "STOP", Usage: Usage{Input: 12778, Output: 84, Reasoning: 60}, Complete: true, Events: 2,
		},
		{ // call 1: generateContentStream
			StopReason: "STOP", Usage: Usage{Input: 12939, CacheRead: 12203}, Complete: true, Events: 1,
		},
		{ // call 2: generateContentStream
			StopReason: "STOP", Usage: Usage{Input: 12939, CacheRead: 12203}, Complete: true, Events: 1,
		},
		{ // call 3: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 407, Prefix: "**Confirming File Creation**\n\nI've succe", Suffix: "on this verification.\n\n\n"},
				{Type: PartText, Text: "I have created the file. What would you like me to do next?", Signature: "CiQBcsjafEAq", SigLen: 532},
			},
			StopReason: "STOP", Usage: Usage{Input: 12887, Output: 72, CacheRead: 12198, Reasoning: 59}, Complete: true, Events: 3,
		},
	},
	"hooks-system.before-tool-selection.responses": {
		{ // call 0: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 687, Prefix: "**Processing File Contents**\n\nI've succe", Suffix: "ntent is top of mind.\n\n\n"},
				{Type: PartToolCall, Name: "read_file", Input: `{"file_path":"new_file_data.txt"}`, Signature: "CiQBcsjafPcD", SigLen: 1264},
			},
			StopReason: "STOP", Usage: Usage{Input: 12803, Output: 195, CacheRead: 11797, Reasoning: 174}, Complete: true, Events: 3,
		},
		{ // call 1: generateContentStream
			Parts: []wantPart{
				{Type: PartText, Text: "Done."},
			},
			StopReason: "STOP", Usage: Usage{}, Complete: true, Events: 1,
		},
	},
	"hooks-system.block-tool.responses": {
		{ // call 0: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 290, Prefix: "**Constructing File Parameters**\n\nI'm cu", Suffix: "esired file creation.\n\n\n"},
				{Type: PartToolCall, Name: "write_file", Input: `{"file_path":"test.txt","content":"Hello World"}`, Signature: "CiQBcsjafGeG", SigLen: 492},
			},
			StopReason: "STOP", Usage: Usage{Input: 12779, Output: 88, Reasoning: 64}, Complete: true, Events: 2,
		},
		{ // call 1: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 220, Prefix: "**Acknowledge the Block**\n\nI've hit a sn", Suffix: "how to adjust course.\n\n\n"},
				{Type: PartText, Len: 98, Prefix: "I am sorry, but I was unable to create t", Suffix: " by the security policy.", Signature: "CikBcsjafKIx", SigLen: 356},
			},
			StopReason: "STOP", Usage: Usage{Input: 12886, Output: 60, Reasoning: 39}, Complete: true, Events: 2,
		},
	},
	"hooks-system.disabled-via-command.responses": {
		{ // call 0: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 119, Prefix: "**Creating the First Test File**\n\nI'll u", Suffix: " the content \"test1\".\n\n\n"},
				{Type: PartToolCall, Name: "write_file", Input: `{"content":"test1","file_path":"first-run.txt"}`, Signature: "CiQBcsjafG+J", SigLen: 524},
			},
			StopReason: "STOP", Usage: Usage{Input: 12779, Output: 69, CacheRead: 12204, Reasoning: 45}, Complete: true, Events: 2,
		},
		{ // call 1: generateContentStream
			Parts: []wantPart{
				{Type: PartText, Text: "File created successfully. Active hook executed"},
			},
			StopReason: "STOP", Usage: Usage{Input: 12951, Output: 7, CacheRead: 12202}, Complete: true, Events: 1,
		},
		{ // call 2: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 121, Prefix: "**Creating the Second Test File**\n\nI'll ", Suffix: " the content \"test2\".\n\n\n"},
				{Type: PartToolCall, Name: "write_file", Input: `{"content":"test2","file_path":"second-run.txt"}`, Signature: "CiQBcsjafG+J", SigLen: 524},
			},
			StopReason: "STOP", Usage: Usage{Input: 12779, Output: 71, CacheRead: 12204, Reasoning: 47}, Complete: true, Events: 2,
		},
		{ // call 3: generateContentStream
			Parts: []wantPart{
				{Type: PartText, Text: "File created successfully. Active hook executed"},
			},
			StopReason: "STOP", Usage: Usage{Input: 12951, Output: 7, CacheRead: 12202}, Complete: true, Events: 1,
		},
	},
	"hooks-system.multiple-events.responses": {
		{ // call 0: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 574, Prefix: "**Formulating a Plan**\n\nOkay, I've outli", Suffix: "parts of the request.\n\n\n"},
				{Type: PartToolCall, Name: "write_file", Input: `{"file_path":"multi-event-test.txt","content":"testing multiple events"}`, Signature: "CiQBcsjafIqc", SigLen: 724},
			},
			StopReason: "STOP", Usage: Usage{Input: 12622, Output: 119, Reasoning: 91}, Complete: true, Events: 3,
		},
		{ // call 1: generateContentStream
			Parts: []wantPart{
				{Type: PartText, Text: "\n"},
			},
			StopReason: "STOP", Usage: Usage{Input: 12836, CacheRead: 12204}, Complete: true, Events: 2,
		},
		{ // call 2: generateContentStream
			Parts: []wantPart{
				{Type: PartText, Text: "\n"},
			},
			StopReason: "STOP", Usage: Usage{Input: 12836, CacheRead: 12204}, Complete: true, Events: 2,
		},
		{ // call 3: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 736, Prefix: "**Echoing User Commands**\n\nI'm now taske", Suffix: "ns the user provided.\n\n\n"},
				{Type: PartText, Text: "BeforeAgent: User request processed", Signature: "CiQBcsjafAnt", SigLen: 1852},
			},
			StopReason: "STOP", Usage: Usage{Input: 12759, Output: 227, CacheRead: 12199, Reasoning: 223}, Complete: true, Events: 3,
		},
	},
	"hooks-system.notification.responses": {
		{ // call 0: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 260, Prefix: "**Executing the Command**\n\nI've got the ", Suffix: "the supplied command.\n\n\n"},
				{Type: PartToolCall, Name: "run_shell_command", Input: `{"command":"echo test","description":"Running the command 'echo test'"}`, Signature: "CiQBcsjafL1l", SigLen: 460},
			},
			StopReason: "STOP", Usage: Usage{Input: 12751, Output: 78, Reasoning: 50}, Complete: true, Events: 2,
		},
	},
	"json-output.error.responses": {
		{ // call 0: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 773, Prefix: "**Investigating File Access**\n\nI'm curre", Suffix: "g the error response.\n\n\n"},
				{Type: PartToolCall, Name: "read_file", Input: `{"file_path":"/gemini-cli/.integration-tests/1761766343238/json-output-error/path/to/nonexistent/file.txt"}`, Signature: "CiQB0e2Kb0c4", SigLen: 1040},
			},
			StopReason: "STOP", Usage: Usage{Input: 12303, Output: 222, Reasoning: 164}, Complete: true, Events: 3,
		},
		{ // call 1: generateContentStream
			Parts: []wantPart{
				{Type: PartText, Text: "File not found"},
			},
			StopReason: "STOP", Usage: Usage{Input: 12588, Output: 3}, Complete: true, Events: 1,
		},
	},
	"policy-headless-shell-denied.responses": {
		{ // call 0: generateContentStream
			Parts: []wantPart{
				{Type: PartThinking, Len: 299, Prefix: "**Assessing Command Execution**\n\nOkay, I", Suffix: "Y_TEST_ECHO_COMMAND\".\n\n\n"},
				{Type: PartText, Text: "I will execute the requested echo command to verify the policy."},
				{Type: PartToolCall, Name: "run_shell_command", Input: `{"description":"Execute the echo command as requested.","command":"echo POLICY_TEST_ECHO_COMMAND"}`, Signature: "EvkGCvYGAb4+", SigLen: 1192},
			},
			StopReason: "STOP", Usage: Usage{Input: 7949, Output: 256, CacheRead: 6082, Reasoning: 206}, Complete: true, Events: 5,
		},
		{ // call 1: generateContentStream
			Parts: []wantPart{
				{Type: PartText, Text: "AR NAR", Signature: "Er8BCrwBAb4+", SigLen: 260},
			},
			StopReason: "STOP", Usage: Usage{Input: 8226, Output: 29, Reasoning: 27}, Complete: true, Events: 2,
		},
	},
}
