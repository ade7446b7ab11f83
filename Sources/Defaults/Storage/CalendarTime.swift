/// A point in time on the proleptic Gregorian calendar in UTC, as ISO 8601 and property-list XML count dates.
///
/// Worked out with integer arithmetic rather than a date formatter, so that a date prints the same in every notation
/// of `Defaults.PropertyList.Printer`: Foundation's formatters switch to the Julian calendar before 1582, differ from
/// one another before year 1, and print years past 9999 or far before 1 wrongly or not at all. Years outside 0…9999
/// are written as ISO 8601's expanded years: `+10000-01-01`, `-0001-12-31`.
struct CalendarTime: Equatable {
	var year: Int64
	var month: Int
	var day: Int
	var hour: Int
	var minute: Int
	var second: Int
	var millisecond: Int

	/// How far from 2001 a date is put on the calendar: a million years.
	static let rangeInSeconds = 1_000_000 * 31_556_952.0

	/// The calendar time of `seconds` since 2001-01-01 00:00:00 UTC, rounded down to the millisecond; `nil` for NaN
	/// and for dates more than ``rangeInSeconds`` away.
	init?(_ seconds: Double) {
		guard seconds.isFinite, abs(seconds) <= Self.rangeInSeconds else {
			return nil
		}
		// 978,307,200 s from 1970 to 2001.
		let milliseconds = Int64((seconds * 1000).rounded(.down)) + 978_307_200_000
		let dayLength: Int64 = 86_400_000
		let days = milliseconds >= 0 ? milliseconds / dayLength : -((-milliseconds + dayLength - 1) / dayLength)
		let inDay = Int(milliseconds - days * dayLength)
		// Days since 1970-01-01 to a civil date, after Howard Hinnant's `civil_from_days`.
		let shifted = days + 719_468
		let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
		let dayOfEra = shifted - era * 146_097
		let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
		let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
		let monthFromMarch = (5 * dayOfYear + 2) / 153
		day = Int(dayOfYear - (153 * monthFromMarch + 2) / 5 + 1)
		month = Int(monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9)
		year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
		hour = inDay / 3_600_000
		minute = inDay / 60_000 % 60
		second = inDay / 1_000 % 60
		millisecond = inDay % 1_000
	}

	/// `2024-05-01`, `+10000-01-01`, `-0001-12-31`.
	var dateText: String {
		let digits = String(year.magnitude)
		let padded = String(repeating: "0", count: max(0, 4 - digits.count)) + digits
		let sign = year < 0 ? "-" : year > 9_999 ? "+" : ""
		return "\(sign)\(padded)-\(Self.two(month))-\(Self.two(day))"
	}

	/// `12:00:00`.
	var timeText: String {
		"\(Self.two(hour)):\(Self.two(minute)):\(Self.two(second))"
	}

	/// `2024-05-01 12:00:00 +0000`, as macOS `defaults` prints dates.
	var openStep: String {
		"\(dateText) \(timeText) +0000"
	}

	/// `2024-05-01T12:00:00Z`, or `2024-05-01T12:00:00.250Z` with milliseconds.
	func iso8601(milliseconds: Bool = false) -> String {
		guard milliseconds else {
			return "\(dateText)T\(timeText)Z"
		}
		let fraction = String(millisecond)
		return "\(dateText)T\(timeText).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)Z"
	}

	private static func two(_ number: Int) -> String {
		number < 10 ? "0\(number)" : "\(number)"
	}
}
