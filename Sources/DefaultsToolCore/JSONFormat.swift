import Defaults

/// Prints normalised property-list values as JSON for `--json`, with the package's one printer in its JSON notation.
///
/// Written by the package rather than `JSONSerialization`, so that the output is the same everywhere: keys sorted,
/// reals always with a decimal point or an exponent (`1.0`, not `1`) so that their type survives, dates as ISO 8601
/// text with fractional seconds, data as Base64 text.
enum JSONFormat {
	/// `value` as JSON, indented by two spaces a level, or on one line when `pretty` is `false`.
	static func encode(_ value: Any, pretty: Bool = true) -> String {
		Defaults.PropertyList.Printer(.json, indent: pretty ? 2 : nil).text(of: value)
	}

	/// `value` as a JSON string literal.
	static func string(_ value: String) -> String {
		encode(value, pretty: false)
	}
}
