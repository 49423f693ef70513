/// Text from the agent (peer names, item ids, titles, reasons: chosen by other devices and their
/// players) made safe to print on a terminal: control characters could rewrite the screen, set
/// the window title or write the clipboard (OSC 52), and bidirectional overrides could reorder
/// what is read. Each is shown as `\u{…}` instead.
public enum Terminal {
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if isUnsafe(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// C0 and C1 controls, DEL, and the bidirectional embeddings, overrides and isolates.
    static func isUnsafe(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
