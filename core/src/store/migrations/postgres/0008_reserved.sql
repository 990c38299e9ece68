-- Reserved: its number is taken by a change that lands separately.
SELECT 1;
