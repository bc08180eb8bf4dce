import Foundation
import Keyring
import Testing
import TestSupport

@testable import idtool

/// What `idtool --help` promises, read from the built binary's help texts (the user-facing
/// contract): every command, and each command's options as its help lists them.
/// These check files generated from idtool's table, whatever keyring it talks to: they need no
/// provider (`.needs(.providerFree)`), so they run once, not again beside KWallet and KeePassXC.

struct HelpContract {
    struct Entry {
        /// ["item", "get"].
        var words: [String]
        /// "--app", "-h", …
        var options: [String]
        var longOptions: [String] { options.filter { $0.hasPrefix("--") } }
    }

    /// The runnable commands, in the overview's order.
    var commands: [Entry]
    /// Options before any command, from the overview's `idtool --OPTION` lines.
    var topLevelOptions: [String]

    /// The first words after `idtool`: get, show, …, item.
    var topLevelWords: [String] {
        commands.map(\.words[0]).reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
    }

    /// The subcommands of `group`: ["get", "set", "reset"] for "item".
    func subcommands(of group: String) -> [String] {
        commands.filter { $0.words.count == 2 && $0.words[0] == group }.map(\.words[1])
    }

    static func read() throws -> HelpContract {
        let overview = try Idtool.run(["--help"])
        try #require(overview.status == 0)
        var commands: [Entry] = []
        var topLevel: [String] = []
        for line in overview.stdoutText.split(separator: "\n") where line.hasPrefix("  idtool ") {
            // "  idtool item get   IDENTIFIER [--group G] …": the lower-case words before the first placeholder or option.
            let tokens = line.split(separator: " ").dropFirst().map(String.init)
            if let first = tokens.first, first.hasPrefix("-") {
                topLevel.append(first)
                continue
            }
            let words = Array(tokens.prefix { $0.first.map { $0.isLowercase } ?? false })
            let help = try Idtool.run(words + ["--help"])
            try #require(help.status == 0, "\(words) --help")
            commands.append(Entry(words: words, options: options(inHelp: help.stdoutText)))
        }
        try #require(commands.count >= 9, "the overview lists the commands")
        return HelpContract(commands: commands, topLevelOptions: topLevel + ["--help", "-h"])
    }

    /// The options of an option list: lines "  --app APP    the app", "  -h, --help   show this help".
    static func options(inHelp text: String) -> [String] {
        text.split(separator: "\n").filter { $0.hasPrefix("  -") }.flatMap { line -> [String] in
            let label = String(line.dropFirst(2)).components(separatedBy: "  ")[0]
            return label.components(separatedBy: ", ").map { String($0.prefix { $0 != " " }) }
        }
    }
}

/// A scratch directory holding what `idtool --generate` printed.
struct Generated {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("idtool-generated-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, arguments) in [
            ("idtool.1", ["man"]), ("idtool.bash", ["completion", "bash"]), ("_idtool", ["completion", "zsh"]),
            ("idtool.fish", ["completion", "fish"]),
        ] {
            let run = try Idtool.run(["--generate"] + arguments)
            try #require(run.status == 0 && run.stderr.isEmpty && !run.stdout.isEmpty, "--generate \(arguments): \(run.stderr)")
            try run.stdout.write(to: directory.appendingPathComponent(name))
        }
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    func text(_ name: String) throws -> String { try String(contentsOfFile: path(name), encoding: .utf8) }
    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// Runs `shell` ("bash", "zsh", "fish") with `arguments`.
func shell(_ shell: String, _ arguments: [String]) throws -> Idtool.Run {
    let program = ["/usr/bin/\(shell)", "/bin/\(shell)"].first { FileManager.default.isExecutableFile(atPath: $0) }
    let path = try #require(program, "\(shell) is not installed: run scripts/bootstrap")
    return try Idtool.runProgram(URL(fileURLWithPath: path), arguments)
}

/// Single-quoted for bash.
func bashQuoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

@Suite("idtool(1): the man page generated from the help table", .needs(.providerFree))
struct ManPageTests {
    @Test("man -l and groff -ww render the page with no warning")
    func rendersCleanly() throws {
        let generated = try Generated()
        defer { generated.remove() }
        let page = bashQuoted(generated.path("idtool.1"))
        let groff = try shell("bash", ["-c", "groff -man -ww -z \(page) 2>&1"])
        #expect(groff.status == 0)
        #expect(groff.stdoutText.isEmpty, "groff: \(groff.stdoutText)")
        let man = try shell("bash", ["-c", "MANWIDTH=80 man -l \(page) 2>&1 >/dev/null"])
        #expect(man.status == 0)
        #expect(man.stdoutText.isEmpty, "man -l: \(man.stdoutText)")
        let rendered = try shell("bash", ["-c", "MANWIDTH=80 man -l \(page) 2>/dev/null"])
        #expect(rendered.stdoutText.contains("NAME") && rendered.stdoutText.contains("EXIT STATUS"))
    }

    @Test("every command and each of its --help options is in the man page, in that command's section")
    func listsEveryCommandAndOption() throws {
        let contract = try HelpContract.read()
        let generated = try Generated()
        defer { generated.remove() }
        let run = try shell("bash", ["-c", "groff -man -Tascii -P-cbou \(bashQuoted(generated.path("idtool.1")))"])
        try #require(run.status == 0)
        let lines = run.stdoutText.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let synopsis = lines.drop { $0 != "SYNOPSIS" }.prefix { $0 != "DESCRIPTION" }.joined(separator: "\n")
        for command in contract.commands {
            let name = "idtool " + command.words.joined(separator: " ")
            #expect(synopsis.contains(name + " "), "SYNOPSIS has \(name)")
            // The subsection runs from its heading "   idtool get" to the next heading.
            let section = lines.drop { $0 != "   " + name }.dropFirst().prefix { line in
                let isHeading = line.first.map { !$0.isWhitespace } ?? false
                let isSubheading = line.hasPrefix("   ") && !line.hasPrefix("    ")
                return !isHeading && !isSubheading
            }
            try #require(!section.isEmpty, "COMMANDS has a section \(name)")
            let words = Set(section.joined(separator: " ").split(whereSeparator: { " ,()".contains($0) }).map(String.init))
            for option in command.options {
                #expect(words.contains(option), "the man page's \(name) section lists \(option)")
            }
        }
        let text = lines.joined(separator: "\n")
        for option in contract.topLevelOptions { #expect(text.contains(option), "the man page has \(option)") }
        for code in ExitCode.allCases {
            #expect(lines.contains { $0.hasPrefix("       \(code.rawValue) ") }, "EXIT STATUS has \(code.rawValue)")
        }
        #expect(text.contains("IDTOOL_APP"))
    }
}

@Suite("idtool completions for bash, zsh and fish, generated from the help table", .needs(.providerFree))
struct CompletionTests {
    /// What bash's `_idtool` offers for the words typed so far (the last one is being completed).
    static func bash(_ generated: Generated, _ words: [String]) throws -> [String] {
        let script = """
            source \(bashQuoted(generated.path("idtool.bash")))
            COMP_WORDS=(\(words.map(bashQuoted).joined(separator: " "))); COMP_CWORD=\(words.count - 1)
            _idtool; printf '%s\\n' "${COMPREPLY[@]}"
            """
        let run = try shell("bash", ["-c", script])
        #expect(run.status == 0 && run.stderr.isEmpty, "bash: \(run.stderr)")
        return run.stdoutText.split(separator: "\n").map(String.init)
    }

    /// What fish's `complete -C LINE` lists, without the descriptions.
    static func fish(_ generated: Generated, _ line: String) throws -> [String] {
        let run = try shell(
            "fish", ["--no-config", "-c", "source \(bashQuoted(generated.path("idtool.fish"))); complete -C \(bashQuoted(line))"])
        #expect(run.status == 0 && run.stderr.isEmpty, "fish: \(run.stderr)")
        return run.stdoutText.split(separator: "\n").map { String($0.prefix { $0 != "\t" }) }
    }

    @Test("bash completes commands, subcommands, each command's options and fixed values")
    func bashCompletes() throws {
        let contract = try HelpContract.read()
        let generated = try Generated()
        defer { generated.remove() }
        #expect(try Self.bash(generated, ["idtool", "it"]) == ["item"])
        #expect(try Set(Self.bash(generated, ["idtool", ""])) == Set(contract.topLevelWords))
        #expect(try Set(Self.bash(generated, ["idtool", "item", ""])) == Set(contract.subcommands(of: "item")))
        #expect(try Set(Self.bash(generated, ["idtool", "-"])) == Set(contract.topLevelOptions))
        for command in contract.commands {
            #expect(
                try Set(Self.bash(generated, ["idtool"] + command.words + ["--"])) == Set(command.longOptions),
                "idtool \(command.words) -- offers the options of its --help")
            #expect(try Set(Self.bash(generated, ["idtool"] + command.words + ["-"])) == Set(command.options))
        }
        // The value after --app is skipped: "item" there is an app, not the item command.
        #expect(try Self.bash(generated, ["idtool", "get", "--app", "item", ""]) == [])
        #expect(try Self.bash(generated, ["idtool", "get", "--app", "x", "--a"]) == [], "an option given once is not offered again")
        #expect(try Self.bash(generated, ["idtool", "get", "--timeout", ""]) == [], "a free value offers nothing")

        // --key's values are exactly the keys the parser takes.
        for sub in ["get", "set"] {
            let keys = try Self.bash(generated, ["idtool", "item", sub, "id", "--key", ""])
            #expect(keys.count == SecretStore.Key.allCases.count)
            for key in keys { #expect(CommandLineParser.parseKey(key) != nil, "--key \(key) parses") }
            #expect(try Self.bash(generated, ["idtool", "item", sub, "id", "--key", "=", "la"]) == ["label"], "--key=VALUE")
        }
        // --from's values are the kinds of SOURCE the parser takes, "file:" and "keyring:" to be continued.
        let sources = try Self.bash(generated, ["idtool", "migrate", "--from", ""])
        #expect(Set(sources) == ["machine-id", "file:", "keyring:"])
        for source in sources {
            let example = source == "file:" ? "file:/tmp/x" : source == "keyring:" ? "keyring:a=b" : source
            #expect(throws: Never.self, "--from \(example) parses") { try CommandLineParser.parseSource(example) }
        }
    }

    /// Types a line and a Tab into an interactive zsh in a pseudo-terminal (zsh/zpty), whose
    /// compsys loads `_idtool` from the directory given, and prints each match compsys is given.
    /// It waits for marks, not for time: compadd prints each match, compsys's end prints <END>.
    static let zshCapture = #"""
        zmodload zsh/zpty || exit 69
        dir=$1 line=$2
        zpty z zsh -f -i
        zpty -w z "PROMPT= RPROMPT=; fpath=(${(q)dir} \$fpath)"
        zpty -w z 'autoload -Uz compinit && compinit -u -D'
        zpty -w z 'compadd() { local -a hits; builtin compadd -O hits "$@"; (( ${#hits} )) && print -rl -- "<""M>"${^hits}; builtin compadd "$@" }'
        zpty -w z 'comppostfuncs=(_capture_end); _capture_end() { print -r -- "<""END>" }'
        zpty -w z 'print "<""READY>"'
        zpty -r z out '*<READY>*'
        zpty -w -n z "$line"$'\t'
        zpty -r z out '*<END>*'
        for piece in ${(f)out}; do
          [[ $piece == *'<M>'* ]] && print -r -- ${${piece##*<M>}%%$'\r'*}
        done
        zpty -d z
        """#

    /// What zsh's compsys offers for `line` with the generated `_idtool`.
    static func zsh(_ generated: Generated, _ line: String) throws -> Set<String> {
        let capture = generated.directory.appendingPathComponent("capture.zsh")
        try zshCapture.write(to: capture, atomically: true, encoding: .utf8)
        // `timeout` only guards against a hang (a broken script never reaches <END>); nothing is timed.
        let run = try shell(
            "bash", ["-c", "timeout 120 zsh -f \(bashQuoted(capture.path)) \(bashQuoted(generated.path(""))) \(bashQuoted(line))"])
        #expect(run.status == 0, "zsh capture of '\(line)': status \(run.status), \(run.stderr)")
        return Set(run.stdoutText.split(separator: "\n").map(String.init))
    }

    @Test("zsh's compsys, driven in a pseudo-terminal, completes commands, subcommands, options and --key's values")
    func zshCompletes() throws {
        let contract = try HelpContract.read()
        let generated = try Generated()
        defer { generated.remove() }
        #expect(try Self.zsh(generated, "idtool ") == Set(contract.topLevelWords))
        #expect(try Self.zsh(generated, "idtool item ") == Set(contract.subcommands(of: "item")))
        for command in contract.commands {
            let line = "idtool " + command.words.joined(separator: " ") + " --"
            #expect(try Self.zsh(generated, line) == Set(command.longOptions), "'\(line)' + Tab")
        }
        #expect(
            try Self.zsh(generated, "idtool item set id --key ")
                == Set(SecretStore.Key.allCases.map { $0 == .valueData ? "value" : $0.rawValue }))
    }

    @Test("zsh parses its script, which has a function per command with each of its --help options")
    func zshScript() throws {
        let contract = try HelpContract.read()
        let generated = try Generated()
        defer { generated.remove() }
        let check = try shell("zsh", ["-n", generated.path("_idtool")])
        #expect(check.status == 0 && check.stderr.isEmpty, "zsh -n: \(check.stderr)")
        let script = try generated.text("_idtool")
        #expect(script.hasPrefix("#compdef idtool\n"))
        for command in contract.commands {
            let function = (["_idtool"] + command.words).joined(separator: "_")
            let body = script.components(separatedBy: "\n\(function)() {\n").dropFirst().first?.components(separatedBy: "\n}\n").first
            let text = try #require(body, "the zsh script defines \(function)")
            for option in command.options {
                let spelled = ["'\(option)[", "'\(option)=[", "{\(option),", ",\(option)}"].contains { text.contains($0) }
                #expect(spelled, "\(function) completes \(option)")
            }
        }
        let root = try #require(script.components(separatedBy: "\n_idtool() {\n").dropFirst().first?.components(separatedBy: "\n}\n").first)
        for word in contract.topLevelWords { #expect(root.contains("'\(word):"), "the command menu has \(word)") }
    }

    @Test("fish parses its script, and complete -C lists each command's options and the subcommands")
    func fishCompletes() throws {
        let contract = try HelpContract.read()
        let generated = try Generated()
        defer { generated.remove() }
        let check = try shell("fish", ["--no-config", "--no-execute", generated.path("idtool.fish")])
        #expect(check.status == 0 && check.stderr.isEmpty, "fish --no-execute: \(check.stderr)")
        #expect(try Set(Self.fish(generated, "idtool ")) == Set(contract.topLevelWords))
        #expect(try Set(Self.fish(generated, "idtool item ")) == Set(contract.subcommands(of: "item")))
        for command in contract.commands {
            let line = "idtool " + command.words.joined(separator: " ") + " --"
            #expect(try Set(Self.fish(generated, line)) == Set(command.longOptions), "complete -C '\(line)'")
        }
        #expect(
            try Set(Self.fish(generated, "idtool item get id --key "))
                == Set(SecretStore.Key.allCases.map { $0 == .valueData ? "value" : $0.rawValue }))
        #expect(try Self.fish(generated, "idtool get --app item ") == [], "the value after --app is not a command")
    }
}

@Suite("scripts/install", .needs(.providerFree))
struct InstallTests {
    /// Installs the idtool under test into an empty DESTDIR (IDTOOL_BINARY: `swift test` holds
    /// .build's lock, so the script's own build would wait for this test forever; and a release
    /// build costs minutes in every configuration).
    @Test("installs the binary, the man page and three completions under DESTDIR/PREFIX, and names them")
    func installsEverything() throws {
        let destdir = FileManager.default.temporaryDirectory.appendingPathComponent("idtool-install-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: destdir) }
        var environment = Idtool.baseEnvironment
        environment["DESTDIR"] = destdir.path
        environment["IDTOOL_BINARY"] = try #require(Idtool.binary, "no idtool built").path
        let run = try Idtool.runProgram(
            Idtool.packageRoot.appendingPathComponent("scripts/install"), ["/opt/idtool"], environment: environment)
        try #require(run.status == 0, "scripts/install failed: \(run.stderr.suffix(2000))")
        let expected = [
            "bin/idtool", "share/man/man1/idtool.1", "share/bash-completion/completions/idtool", "share/zsh/site-functions/_idtool",
            "share/fish/vendor_completions.d/idtool.fish",
        ].map { destdir.path + "/opt/idtool/" + $0 }
        #expect(run.stdoutText.split(separator: "\n").map(String.init) == expected, "it prints what it installed")
        for path in expected { #expect(FileManager.default.fileExists(atPath: path), "\(path) is installed") }
        let installed = URL(fileURLWithPath: expected[0])
        #expect(FileManager.default.isExecutableFile(atPath: installed.path))
        #expect(try Idtool.runProgram(installed, ["--version"]).stdoutText == Usage.version + "\n")
        // What is installed is what this source generates.
        #expect(try String(contentsOfFile: expected[1], encoding: .utf8) == ManPage.text)
        #expect(try String(contentsOfFile: expected[4], encoding: .utf8) == Completion.script(for: .fish))
    }

    @Test("refuses a relative PREFIX with status 64")
    func relativePrefix() throws {
        let run = try Idtool.runProgram(Idtool.packageRoot.appendingPathComponent("scripts/install"), ["relative/prefix"])
        #expect(run.status == 64)
        #expect(run.stdout.isEmpty)
    }
}

@Suite("the interface table and the parser agree")
struct InterfaceTableTests {
    /// A valid value for each placeholder the table uses.
    static let samples = [
        "APP": "com.example.app", "GROUP": "com.example", "SECONDS": "1", "SOURCE": "machine-id",
        "UUID": "0123456789abcdef0123456789abcdef",
        "G": "group", "KEY": "label", "A": "alice",
    ]

    /// "idtool WORDS IDENTIFIER --required VALUE": the shortest command line the table allows.
    static func minimal(_ command: Interface.Command) throws -> [String] {
        var arguments = command.words + command.positionals.map { _ in "an-identifier" }
        for option in command.options where option.required {
            arguments += [option.name, try #require(samples[option.value ?? ""], "a sample \(option.value ?? "")")]
        }
        return arguments
    }

    @Test("the parser takes every option the table lists for a command, with a sample value, and only those")
    func parserTakesTheTablesOptions() throws {
        for command in Interface.commands where command.subcommands.isEmpty {
            let base = try Self.minimal(command)
            #expect(throws: Never.self, "\(base)") { try CommandLineParser.parse(base, environment: [:]) }
            for option in command.options where !option.required && option.name != Interface.help.name {
                let value = try option.value.map { try #require(Self.samples[$0], "a sample \($0)") }
                let arguments = base + [option.name] + (value.map { [$0] } ?? [])
                #expect(throws: Never.self, "\(arguments)") { try CommandLineParser.parse(arguments, environment: [:]) }
            }
            let others = Set(Interface.commands.flatMap(\.options).map(\.name)).subtracting(command.options.map(\.name))
            for name in others {
                #expect(throws: UsageError(message: "unknown option '\(name)'", topic: command.topic), "\(command.name) refuses \(name)") {
                    try CommandLineParser.parse(base + [name, "x"], environment: [:])
                }
            }
            for option in command.options where option.required {
                let without = base.filter { $0 != option.name && $0 != Self.samples[option.value ?? ""] }
                #expect(throws: UsageError(message: "\(command.name) needs \(option.label)", topic: command.topic)) {
                    try CommandLineParser.parse(without, environment: [:])
                }
            }
        }
    }

    /// The bash and zsh completions insert words, option names and choice values unquoted (fish
    /// quotes them), so the table may hold only characters no shell treats specially.
    @Test("every command word, option name and choice value is shell-safe, so the completions may insert it unquoted")
    func tableWordsAreShellSafe() {
        let safe = /[A-Za-z0-9][A-Za-z0-9:._-]*/
        for command in Interface.commands {
            for word in command.words { #expect(word.wholeMatch(of: safe) != nil, "command word \(word)") }
            for option in command.options + Interface.topLevelOptions {
                #expect(option.name.wholeMatch(of: /--?[A-Za-z0-9-]+/) != nil, "option \(option.name)")
                for choice in option.choices {
                    #expect(choice.value.wholeMatch(of: safe) != nil, "\(command.name) \(option.name) value \(choice.value)")
                }
            }
        }
    }

    @Test("--generate is hidden from --help and takes man or completion bash|zsh|fish")
    func generate() throws {
        #expect(try CommandLineParser.parse(["--generate", "man"], environment: [:]) == .generate(.man))
        for shell in Shell.allCases {
            #expect(
                try CommandLineParser.parse(["--generate", "completion", shell.rawValue], environment: [:]) == .generate(.completion(shell))
            )
        }
        for bad in [[], ["completion"], ["completion", "tcsh"], ["man", "extra"], ["html"]] {
            #expect(throws: UsageError.self, "\(bad)") { try CommandLineParser.parse(["--generate"] + bad, environment: [:]) }
        }
        let run = try Idtool.run(["--generate", "completion", "tcsh"])
        #expect(run.status == 64 && run.stdout.isEmpty)
        #expect(!Usage.text(for: .overview).contains("--generate"))
    }
}
