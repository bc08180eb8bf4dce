/// Help texts, laid out from `Interface`. `--help` prints them to stdout; a usage error prints one to stderr.
enum Usage {
    /// What `idtool --version` prints.
    static let version = "idtool 0.1.0"

    /// Where option descriptions start: two spaces, the label padded to 17, two spaces.
    static let descriptionColumn = 21

    /// The usage text for `topic`, ending in a newline.
    static func text(for topic: HelpTopic) -> String {
        var lines: [String]
        if topic == .overview {
            lines = ["idtool: \(Interface.purpose).", "", "Usage:"]
            lines += synopses(of: Interface.topLevel).map { "  " + $0 }
            lines += ["  idtool --version", ""] + Interface.notes + ["", "Exit status:"]
            for status in Interface.exitStatuses {
                let code = String(status.code.rawValue)
                lines += hanging("  " + code + String(repeating: " ", count: max(1, 4 - code.count)), status.help, column: 6)
            }
        } else {
            let command = Interface.command(topic)
            if command.subcommands.isEmpty {
                lines = ["Usage: " + synopsis(of: command), ""] + command.about + [""]
                for option in command.options { lines += optionLines(option) }
            } else {
                lines = ["Usage:"] + synopses(of: command.subcommands.map(Interface.command)).map { "  " + $0 } + [""] + command.about
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// "idtool get [--app APP] … [--no-prompt]": positionals, then the options but help, optional
    /// ones in brackets, then "< VALUE" when the command reads stdin. `pad` widens the last word.
    static func synopsis(of command: Interface.Command, pad: Int = 0) -> String {
        let last = command.words.last!
        var words = ["idtool"] + command.words.dropLast() + [last + String(repeating: " ", count: max(0, pad - last.count))]
        words += command.positionalsOptional ? command.positionals.map { "[\($0)]" } : command.positionals
        for option in command.options where option.name != Interface.help.name {
            let text = option.name + (option.value.map { " " + $0 } ?? "")
            words.append(option.required ? text : "[\(text)]")
        }
        return words.joined(separator: " ") + (command.stdin.map { "  < " + $0 } ?? "")
    }

    /// Sibling commands' synopses with their names padded to one width, so the options line up.
    static func synopses(of commands: [Interface.Command]) -> [String] {
        let width = commands.filter { $0.subcommands.isEmpty }.map { $0.words.last!.count }.max() ?? 0
        return commands.flatMap { command in
            command.subcommands.isEmpty ? [synopsis(of: command, pad: width)] : synopses(of: command.subcommands.map(Interface.command))
        }
    }

    /// An option's lines: its label, then its description (or its table of choices) from column 21.
    static func optionLines(_ option: Interface.Option) -> [String] {
        var help = option.help
        if option.tabulatesChoices {
            let width = option.choices.map(\.label.count).max() ?? 0
            help += option.choices.map { $0.label + String(repeating: " ", count: width - $0.label.count + 2) + $0.help }
        }
        let label = "  " + option.label
        return hanging(label + String(repeating: " ", count: max(2, descriptionColumn - label.count)), help, column: descriptionColumn)
    }

    /// `head` followed by the first line, the others indented to `column`.
    static func hanging(_ head: String, _ lines: [String], column: Int) -> [String] {
        guard let first = lines.first else { return [head] }
        return [head + first] + lines.dropFirst().map { String(repeating: " ", count: column) + $0 }
    }
}
