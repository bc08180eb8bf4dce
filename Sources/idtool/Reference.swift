/// The DocC article's reference regions, laid out from `Interface` in Markdown
/// (`idtool --generate reference`). `scripts/docs-tables --update` copies them into Idtool.md, and
/// ManPageAndCompletionTests checks that the article holds exactly these.
enum Reference {
    /// The article that holds the regions, from the package root.
    static let article = "Sources/DeviceIdentity/Documentation.docc/Idtool.md"

    /// Each region's name and its Markdown, in the article's order.
    static var regions: [(name: String, text: String)] {
        [("idtool-synopsis", synopsis), ("idtool-commands", commands)]
    }

    /// Every region between its markers, as the article holds them; ends in a newline.
    static var text: String {
        regions.map { "<!-- BEGIN \($0.name) -->\n\($0.text)\n<!-- END \($0.name) -->\n" }.joined()
    }

    /// The overview's synopsis lines, as `idtool --help` prints them.
    static var synopsis: String {
        let lines = Usage.synopses(of: Interface.topLevel) + ["idtool --version"]
        return (["```"] + lines + ["```"]).joined(separator: "\n")
    }

    /// A section per runnable command (its help text and an option table), then the exit statuses
    /// and the environment.
    static var commands: String {
        var out = ["## Commands", ""]
        for command in ManPage.leaves(Interface.topLevel) {
            out += ["### idtool \(command.name)", "", "`" + Usage.synopsis(of: command) + "`", ""]
            for paragraph in ManPage.paragraphs(command.about) { out += [paragraph.joined(separator: " "), ""] }
            out += ["| option | meaning |", "|---|---|"]
            for option in command.options { out.append("| `\(option.label)` | \(cell(meaning(of: option))) |") }
            out.append("")
        }
        out += ["## Exit status", "", "| status | meaning |", "|---|---|"]
        for status in Interface.exitStatuses {
            out.append("| \(status.code.rawValue) | \(cell(status.help.joined(separator: " "))) |")
        }
        out += ["", "## Environment", "", "| variable | meaning |", "|---|---|"]
        for variable in Interface.environment { out.append("| `\(variable.name)` | \(cell(variable.help)) |") }
        return out.joined(separator: "\n")
    }

    /// An option's description; a tabulated option's choices follow it, each with what it means.
    static func meaning(of option: Interface.Option) -> String {
        guard option.tabulatesChoices else { return option.summary }
        let choices = option.choices.map { "`\($0.label)`" + ($0.help.isEmpty ? "" : ": \($0.help)") }.joined(separator: "; ")
        return option.help.isEmpty ? "one of " + choices : option.summary + " One of " + choices
    }

    /// Text for a table cell: a bar would end the cell.
    static func cell(_ text: String) -> String {
        text.split(separator: "|", omittingEmptySubsequences: false).joined(separator: "\\|")
    }
}
